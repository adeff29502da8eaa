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
from tests.e2e.harness.stack_objects import deployed
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


def smoke_test_pod(settings_file: Path | None, pool: str, *extra: str) -> dict[str, Any]:
    """The pod `gpu-pool smoke-test-manifest --pool POOL` prints for these settings."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "smoke-test-manifest",
                "--cdk-json",
                str(ROOT / "cdk.json"),
                *(["--config", str(settings_file)] if settings_file else []),
                "--pool",
                pool,
                *extra,
            ]
        )
    assert code == 0, out.getvalue()
    (pod,) = [d for d in yaml.safe_load_all(out.getvalue()) if d and d.get("kind") == "Pod"]
    return dict(pod)
