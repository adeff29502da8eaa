"""Which managed node groups a deploy would replace or delete, read from two templates.

CloudFormation replaces an AWS::EKS::Nodegroup when one of its create-only properties changes
(its resource schema; ../shared/FACTS.md). It creates the new group first, then deletes the old
one, whose nodes are drained for a few minutes with PodDisruptionBudgets ignored
(aws/containers-roadmap#1636): running GPU jobs die. A group whose logical id is gone from the
new template is deleted the same way; gpu-pool's logical ids name the instance types (and zone),
so changing those shows up here as a deletion beside a new group of the same pool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

NODEGROUP = "AWS::EKS::Nodegroup"
CREATE_ONLY = (
    "AmiType",
    "CapacityType",
    "ClusterName",
    "DiskSize",
    "InstanceTypes",
    "NodeRole",
    "NodegroupName",
    "RemoteAccess",
    "Subnets",
)
POOL_LABEL = "gpu-pool.io/pool"


@dataclass(frozen=True)
class NodegroupLoss:
    """A deployed node group the new template replaces or deletes, and why."""

    logical_id: str
    pool: str | None
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        owner = f"pool {self.pool}" if self.pool else "not a gpu-pool pool"
        return f"{self.logical_id} ({owner}): " + "; ".join(self.reasons)


def nodegroup_losses(deployed: dict[str, Any], new: dict[str, Any]) -> list[NodegroupLoss]:
    """Every node group of `deployed` that deploying `new` would replace or delete."""
    old_groups, new_groups = _nodegroups(deployed), _nodegroups(new)
    losses = []
    for logical_id, old in old_groups.items():
        if logical_id in new_groups:
            changed = [
                f"{name}: {_show(old.get(name))} -> {_show(new_groups[logical_id].get(name))}"
                for name in CREATE_ONLY
                if old.get(name) != new_groups[logical_id].get(name)
            ]
            if changed:
                losses.append(NodegroupLoss(logical_id, _pool(old), ("replaced", *changed)))
            continue
        pool = _pool(old)
        successors = [
            props
            for other_id, props in new_groups.items()
            if pool is not None and other_id not in old_groups and _pool(props) == pool
        ]
        reasons = ["deleted"]
        if len(successors) == 1:
            reasons += [
                f"{name}: {_show(old.get(name))} -> {_show(successors[0].get(name))}"
                for name in CREATE_ONLY
                if name != "NodegroupName" and old.get(name) != successors[0].get(name)
            ]
        losses.append(NodegroupLoss(logical_id, pool, tuple(reasons)))
    return losses


def _nodegroups(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource.get("Properties", {})
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("Type") == NODEGROUP
    }


def _pool(props: dict[str, Any]) -> str | None:
    labels = props.get("Labels")
    pool = labels.get(POOL_LABEL) if isinstance(labels, dict) else None
    return pool if isinstance(pool, str) else None


def _show(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value, separators=(",", ":"))
