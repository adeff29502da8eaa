"""A karpenter.sh/v1 NodePool for a pool, whoever runs Karpenter: the project's own Karpenter
installation (plan/karpenter.py) or EKS Auto Mode (plan/auto_mode.py). They differ in the node
class a NodePool points to and the requirement keys they know; disruption and limits are the
pool's either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_pool.model.catalog import Architecture
from gpu_pool.model.karpenter_api import NODE_POOL_API, resource_name
from gpu_pool.model.labels import GPU_RESOURCE
from gpu_pool.settings import PoolSettings

CAPACITY_TYPES = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
KUBERNETES_ARCH = {Architecture.X86_64: "amd64", Architecture.ARM64: "arm64"}
# Emptiness and drift one node at a time. Budgets never pace expiry (aws/karpenter-provider-aws
# v1.14.1 website/content/en/docs/concepts/disruption.md, "NodePool Disruption Budgets"):
# termination_grace_period bounds that.
_DISRUPTION_BUDGET = {"nodes": "1"}


def requirement(key: str, values: Sequence[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def node_pool(
    settings: PoolSettings,
    *,
    node_class_ref: Mapping[str, str],
    labels: Mapping[str, str],
    requirements: Sequence[Mapping[str, Any]],
    expire_after: str,
    consolidate_after: str,
    gpu_limit: int,
) -> dict[str, Any]:
    """The NodePool `gpu-pool-<pool>`: its nodes carry the pool's labels and taints, only empty
    nodes are consolidated (a node running a GPU pod is never consolidated away), and the pool
    is limited to `gpu_limit` GPUs and max_size nodes."""
    karpenter = settings.karpenter
    node_spec: dict[str, Any] = {
        "nodeClassRef": dict(node_class_ref),
        "requirements": [dict(r) for r in requirements],
        "taints": [t.node_taint() for t in settings.taints],
        "expireAfter": expire_after,
    }
    if karpenter.termination_grace_period is not None:
        node_spec["terminationGracePeriod"] = karpenter.termination_grace_period
    return {
        "apiVersion": NODE_POOL_API,
        "kind": "NodePool",
        "metadata": {"name": resource_name(settings.name)},
        "spec": {
            "template": {"metadata": {"labels": dict(labels)}, "spec": node_spec},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": consolidate_after,
                "budgets": [dict(_DISRUPTION_BUDGET)],
            },
            "limits": {GPU_RESOURCE: str(gpu_limit), "nodes": str(settings.max_size)},
        },
    }


def gpu_limit(settings: PoolSettings, largest_gpu_count: int) -> int:
    """The NodePool's GPU limit: the setting, else max_size nodes of the largest type."""
    limit = settings.karpenter.gpu_limit
    return settings.max_size * largest_gpu_count if limit is None else limit
