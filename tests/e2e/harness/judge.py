"""The API server's verdict on an object: a server-side dry-run create (`dryRun=All`), which
runs defaulting, the CRD's OpenAPI schema and CEL rules, and admission, and stores nothing."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

_JSON = {"Content-Type": "application/json", "Accept": "application/json"}


def _call(api: ApiClient, method: str, path: str, **kwargs: Any) -> Any:
    return api.call_api(
        path,
        method,
        header_params=dict(_JSON),
        response_type="object",
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        **kwargs,
    )


@cache
def _resources(api: ApiClient, group_version: str) -> dict[str, tuple[str, bool]]:
    """{kind: (resource, namespaced)} that discovery lists for a group version."""
    prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    listed = _call(api, "GET", prefix)
    return {
        r["kind"]: (r["name"], r["namespaced"]) for r in listed["resources"] if "/" not in r["name"]
    }


def resource_path(api: ApiClient, manifest: dict[str, Any], namespace: str = "default") -> str:
    group_version = manifest["apiVersion"]
    resource, namespaced = _resources(api, group_version)[manifest["kind"]]
    prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    if namespaced:
        prefix += f"/namespaces/{manifest['metadata'].get('namespace', namespace)}"
    return f"{prefix}/{resource}"


def judge(api: ApiClient, manifest: dict[str, Any], namespace: str = "default") -> list[str]:
    """[] when the API server would create `manifest`; else each cause it names, as
    `field: message` (or its message, when it names no field)."""
    try:
        _call(
            api,
            "POST",
            resource_path(api, manifest, namespace),
            query_params=[("dryRun", "All")],
            body=manifest,
        )
    except ApiException as refused:
        status = json.loads(refused.body or "{}")
        causes = status.get("details", {}).get("causes", [])
        return [f"{c.get('field', '')}: {c['message']}".lstrip(": ") for c in causes] or [
            status.get("message", str(refused))
        ]
    return []


def forget_discovery() -> None:
    """New CRDs were installed: discovery is read again."""
    _resources.cache_clear()
