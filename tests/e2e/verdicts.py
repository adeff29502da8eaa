"""The API server's verdict on one object as a deploy sends it, for the tests that judge gpu-pool's
custom resources (NodePool, EC2NodeClass, Auto Mode's NodeClass, nodeadm's NodeConfig,
ComputeDomain) and its built-in DRA objects (ResourceClaimTemplate, Pod) one by one.

`judge_strictly` is a server-side dry-run create (defaulting, the OpenAPI schema, the CRD's CEL
rules, admission; nothing stored) with `fieldValidation=Strict`, which kubectl sends by default
(`--validate=strict`) and so what the stack's kubectl handler's `kubectl apply` gets: a field
the API does not have is refused, not silently dropped. It reads the raw response
(`_preload_content=False`), as the official client's `call_api` takes `response_types_map`
since kubernetes 35 and no `response_type`.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from tests.e2e.harness.cluster import Cluster, install_crds
from tests.e2e.harness.crds import crd_documents

_JSON = {"Content-Type": "application/json", "Accept": "application/json"}


def _call(api: ApiClient, method: str, path: str, **kwargs: Any) -> Any:
    response = api.call_api(
        path,
        method,
        header_params=dict(_JSON),
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        _preload_content=False,
        **kwargs,
    )
    return json.loads(response.data or b"{}")


def _prefix(group_version: str) -> str:
    return "/api/v1" if group_version == "v1" else f"/apis/{group_version}"


@cache
def _resources(api: ApiClient, group_version: str) -> dict[str, tuple[str, bool]]:
    """{kind: (resource, namespaced)} that discovery lists for a group version."""
    listed = _call(api, "GET", _prefix(group_version))
    return {
        r["kind"]: (r["name"], r["namespaced"]) for r in listed["resources"] if "/" not in r["name"]
    }


def _path(api: ApiClient, manifest: dict[str, Any], namespace: str) -> str:
    resource, namespaced = _resources(api, manifest["apiVersion"])[manifest["kind"]]
    prefix = _prefix(manifest["apiVersion"])
    if namespaced:
        prefix += f"/namespaces/{manifest['metadata'].get('namespace', namespace)}"
    return f"{prefix}/{resource}"


def judge_strictly(
    api: ApiClient, manifest: dict[str, Any], namespace: str = "default"
) -> list[str]:
    """[] when the API server would create `manifest` as kubectl sends it; else each cause it
    names, as `field: message` (or its message, when it names no field). A namespaced object
    goes in `namespace` unless it names its own."""
    try:
        _call(
            api,
            "POST",
            _path(api, manifest, namespace),
            query_params=[("dryRun", "All"), ("fieldValidation", "Strict")],
            body=manifest,
        )
    except ApiException as refused:
        status = json.loads(refused.body or "{}")
        causes = status.get("details", {}).get("causes", [])
        return [f"{c.get('field', '')}: {c['message']}".lstrip(": ") for c in causes] or [
            status.get("message", str(refused))
        ]
    return []


def refusals(api: ApiClient, manifests: dict[Any, dict[str, Any]]) -> dict[Any, list[str]]:
    """What the API server refuses of each of `manifests` (by the caller's key); {} when it
    would create them all."""
    return {
        key: problems
        for key, manifest in manifests.items()
        if (problems := judge_strictly(api, manifest))
    }


def _established(cluster: Cluster, names: set[str]) -> bool:
    listed = _call(cluster.api, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    ready = {
        crd["metadata"]["name"]
        for crd in listed["items"]
        if any(
            c["type"] == "Established" and c["status"] == "True"
            for c in crd.get("status", {}).get("conditions", [])
        )
    }
    return names <= ready


@cache
def _crd_documents() -> tuple[dict[str, Any], ...]:
    """Read once: parsing the charts' large CRDs takes seconds."""
    return tuple(crd_documents())


def with_crds(cluster: Cluster) -> Cluster:
    """The cluster with the CRDs of the releases gpu-pool pins installed, each Established
    (installed once per session: another module's asking finds them there and costs one list);
    discovery read afresh."""
    documents = list(_crd_documents())
    if not _established(cluster, {d["metadata"]["name"] for d in documents}):
        install_crds(cluster, documents)
        _resources.cache_clear()
    return cluster
