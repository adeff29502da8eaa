"""Which managed node groups a deploy would replace, delete or roll, read from two templates.

CloudFormation replaces an AWS::EKS::Nodegroup when one of its create-only properties changes
(createOnlyProperties in its CloudFormation resource schema). It creates the new group first,
then deletes the old
one, whose nodes are drained for a few minutes with PodDisruptionBudgets ignored
(aws/containers-roadmap#1636): running GPU jobs die. A group whose logical id is gone from the
new template is deleted the same way; gpu-pool's logical ids name the instance types (and zone),
so changing those shows up here as a deletion beside a new group of the same pool.

A changed Version, ReleaseVersion or launch template (gpu-pool's carries the volume size and
metadata options) is an update instead: EKS replaces the nodes one at a time and respects PDBs.
Those groups are named too, as rolled, without a question.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.model.labels import POOL_LABEL

NODEGROUP = "AWS::EKS::Nodegroup"
ROLLING = ("Version", "ReleaseVersion")
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
            changed = _changes(CREATE_ONLY, old, new_groups[logical_id])
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
            kept_name = [name for name in CREATE_ONLY if name != "NodegroupName"]
            reasons += _changes(kept_name, old, successors[0])
        losses.append(NodegroupLoss(logical_id, pool, tuple(reasons)))
    return losses


def nodegroup_rolls(deployed: dict[str, Any], new: dict[str, Any]) -> list[NodegroupLoss]:
    """Node groups kept by `new` whose nodes it replaces one at a time (PDBs respected)."""
    old_groups, new_groups = _nodegroups(deployed), _nodegroups(new)
    rolls = []
    for logical_id, old in old_groups.items():
        now = new_groups.get(logical_id)
        if now is None:
            continue
        old_data = _launch_template_data(deployed, old)
        new_data = _launch_template_data(new, now)
        changed = _changes(ROLLING, old, now) + _changes(
            sorted(old_data.keys() | new_data.keys()), old_data, new_data, "launch template "
        )
        if changed:
            rolls.append(NodegroupLoss(logical_id, _pool(old), ("rolled", *changed)))
    return rolls


def _changes(
    names: Sequence[str], old: dict[str, Any], new: dict[str, Any], label: str = ""
) -> list[str]:
    """`<label><name>: old -> new` for each of `names` whose value differs."""
    return [
        f"{label}{name}: {_show(old.get(name))} -> {_show(new.get(name))}"
        for name in names
        if old.get(name) != new.get(name)
    ]


def _launch_template_data(template: dict[str, Any], nodegroup: dict[str, Any]) -> dict[str, Any]:
    """The LaunchTemplateData of the template's launch template the node group refers to."""
    reference = nodegroup.get("LaunchTemplate", {}).get("Id")
    logical_id = reference.get("Ref") if isinstance(reference, dict) else None
    resource = template.get("Resources", {}).get(logical_id, {}) if logical_id else {}
    data = resource.get("Properties", {}).get("LaunchTemplateData", {})
    return data if isinstance(data, dict) else {}


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
