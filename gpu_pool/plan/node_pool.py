"""A karpenter.sh/v1 NodePool for a pool, whoever runs Karpenter: the project's own Karpenter
installation (plan/karpenter.py) or EKS Auto Mode (plan/auto_mode.py). They differ in the node
class a NodePool points to and the requirement keys they know; disruption and limits are the
pool's either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from gpu_pool.model.catalog import Architecture, GpuInstanceType
from gpu_pool.model.karpenter_api import (
    CAPACITY_TYPE_LABEL,
    NODE_POOL_API,
    NODE_POOL_LABEL,
    resource_name,
)
from gpu_pool.model.labels import ARCH_LABEL, GPU_RESOURCE, INSTANCE_TYPE_LABEL, ZONE_LABEL
from gpu_pool.settings import PoolSettings

CAPACITY_TYPES = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
KUBERNETES_ARCH = {Architecture.X86_64: "amd64", Architecture.ARM64: "arm64"}
# Emptiness and drift one node at a time. Budgets never pace expiry (aws/karpenter-provider-aws
# v1.14.1 website/content/en/docs/concepts/disruption.md, "NodePool Disruption Budgets"):
# termination_grace_period bounds that.
_DISRUPTION_BUDGET = {"nodes": "1"}


def requirement(key: str, values: Sequence[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


@dataclass(frozen=True)
class NodePoolPlan:
    """One pool as a NodePool: what Karpenter's and Auto Mode's pools share. A subclass names
    its node class (`node_class_group`, `node_class_kind`) and its GPU manufacturer key."""

    node_class_group: ClassVar[str]
    node_class_kind: ClassVar[str]
    gpu_manufacturer_label: ClassVar[str]

    name: str
    setting: str
    settings: PoolSettings
    instance_types: tuple[GpuInstanceType, ...]
    labels: Mapping[str, str]
    gpu_limit: int

    @property
    def architectures(self) -> list[Architecture]:
        return sorted({t.architecture for t in self.instance_types})

    @property
    def expire_after(self) -> str:
        return self.settings.karpenter.expire_after

    @property
    def consolidate_after(self) -> str:
        return self.settings.karpenter.consolidate_after

    def capacity_types(self) -> list[str]:
        """The NodePool's karpenter.sh/capacity-type values: the pool's capacity type."""
        return [CAPACITY_TYPES[self.settings.capacity_type]]

    def requirements(self) -> list[dict[str, Any]]:
        """What every node of the pool is: an NVIDIA GPU type of the pool, its CPU
        architecture(s), its capacity type(s) and (if listed) zones."""
        requirements = [
            requirement(self.gpu_manufacturer_label, ["nvidia"]),
            requirement(INSTANCE_TYPE_LABEL, [t.name for t in self.instance_types]),
            requirement(ARCH_LABEL, [KUBERNETES_ARCH[a] for a in self.architectures]),
            requirement(CAPACITY_TYPE_LABEL, self.capacity_types()),
        ]
        if self.settings.zones:
            requirements.append(requirement(ZONE_LABEL, list(self.settings.zones)))
        return requirements

    def launched_node_labels(
        self, instance_type: GpuInstanceType, zone: str | None = None
    ) -> dict[str, str]:
        """The labels a node this NodePool launches carries: the template's, and the
        well-known ones of the chosen offering (a subclass adds its provider's own)."""
        labels = {
            **self.labels,
            NODE_POOL_LABEL: resource_name(self.name),
            CAPACITY_TYPE_LABEL: self.capacity_types()[0],
            INSTANCE_TYPE_LABEL: instance_type.name,
            ARCH_LABEL: KUBERNETES_ARCH[instance_type.architecture],
            "kubernetes.io/os": "linux",
            self.gpu_manufacturer_label: "nvidia",
        }
        if zone is not None:
            labels[ZONE_LABEL] = zone
        return labels

    def node_pool(self) -> dict[str, Any]:
        return node_pool(
            self.settings,
            node_class_ref={
                "group": self.node_class_group,
                "kind": self.node_class_kind,
                "name": resource_name(self.name),
            },
            labels=self.labels,
            requirements=self.requirements(),
            expire_after=self.expire_after,
            consolidate_after=self.consolidate_after,
            gpu_limit=self.gpu_limit,
        )


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
