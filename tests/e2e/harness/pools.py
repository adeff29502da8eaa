"""A stack's pools as the cluster meets them: each node group's nodes, and the smoke-test pod
`gpu-pool smoke-test-manifest` prints for a pool."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import yaml
from aws_cdk.assertions import Template

from gpu_pool.cli.main import main
from tests.e2e.harness.nodes import GPU_RESOURCE, node_group_node
from tests.e2e.harness.stack_objects import Release, deployed, releases
from tests.support.paths import ROOT

POOL_LABEL = "gpu-pool.io/pool"


def node_group(template: Template, pool: str) -> tuple[str, dict[str, Any]]:
    """(logical id, deployed properties) of the pool's only node group."""
    found = [
        (logical_id, deployed(resource["Properties"]))
        for logical_id, resource in template.find_resources("AWS::EKS::Nodegroup").items()
        if resource["Properties"].get("Labels", {}).get(POOL_LABEL) == pool
    ]
    assert len(found) == 1, f"pool {pool}: node groups {[f[0] for f in found]}"
    return found[0]


def device_plugin(template: Template) -> Release:
    """The template's only device plugin release."""
    (plugin,) = [r for r in releases(template) if r.chart == "nvidia-device-plugin"]
    return plugin


def pool_node(template: Template, pool: str, name: str) -> dict[str, Any]:
    """The Node the pool's node group's first instance registers as `name`."""
    logical_id, properties = node_group(template, pool)
    return node_group_node(name, properties, nodegroup_name=logical_id)


def gpu_pool(*arguments: str) -> tuple[int, str, str]:
    """`gpu-pool VERB ARGS...` with the project's cdk.json: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([arguments[0], "--cdk-json", str(ROOT / "cdk.json"), *arguments[1:]])
    return code, out.getvalue(), err.getvalue()


def smoke_test_objects(settings_file: Path | None, pool: str) -> list[dict[str, Any]]:
    """What `gpu-pool smoke-test-manifest --pool POOL` prints for these settings (a DRA
    pool's claim template first, then the pod)."""
    config = ["--config", str(settings_file)] if settings_file else []
    code, out, err = gpu_pool("smoke-test-manifest", *config, "--pool", pool)
    assert code == 0, err
    return [d for d in yaml.safe_load_all(out) if d]


def smoke_test_pod(settings_file: Path | None, pool: str) -> dict[str, Any]:
    """The smoke-test pod for a device plugin pool."""
    (pod,) = [o for o in smoke_test_objects(settings_file, pool) if o["kind"] == "Pod"]
    return pod


def workload_pod(
    name: str,
    gpus: int,
    selector: dict[str, str],
    tolerations: list[dict[str, str]],
    resource: str = GPU_RESOURCE,
) -> dict[str, Any]:
    """A pod asking for `gpus` of `resource` (none: a CPU pod), on nodes with `selector`."""
    limits = {resource: str(gpus)} if gpus else {"cpu": "500m"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": selector,
            "tolerations": [{**t, "operator": "Equal"} for t in tolerations],
            "containers": [
                {
                    "name": "app",
                    "image": "public.ecr.aws/docker/library/busybox:1.37",
                    "resources": {"limits": limits, "requests": limits},
                }
            ],
        },
    }
