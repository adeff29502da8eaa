"""What a deploy would replace, delete or roll of what running work depends on, read from two
templates: managed node groups, and the cluster, its VPC, subnets, NAT gateway, route tables
and launch templates.

CloudFormation replaces an AWS::EKS::Nodegroup when one of its create-only properties changes
(createOnlyProperties in its CloudFormation resource schema). It creates the new group first,
then deletes the old
one, whose nodes are drained for a few minutes with PodDisruptionBudgets ignored
(aws/containers-roadmap#1636): running GPU jobs die. A group whose logical id is gone from the
new template is deleted the same way; gpu-pool's logical ids name the instance types (and zone),
so changing those shows up here as a deletion beside a new group of the same pool.

A changed Version, ReleaseVersion or launch template (gpu-pool's carries the volume size and
metadata options) is an update instead: EKS replaces the nodes one at a time and respects PDBs.
Those groups are named too, as rolled, without a question, except a Capacity Block group: EKS
updates one only at desired size 0 (EKS user guide, ml/capacity-blocks-mng). Added groups are
named as well, so that a deleted group's successor shows beside it.

A resource is also replaced when a create-only property refers (Ref, Fn::GetAtt) to a resource
the deploy replaces: a new subnet replaces the NAT gateway and node groups in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.model.aws_names import is_local_zone
from gpu_pool.model.labels import POOL_LABEL

NODEGROUP = "AWS::EKS::Nodegroup"
CLUSTER = "AWS::EKS::Cluster"
ADDON = "AWS::EKS::Addon"
SUBNET = "AWS::EC2::Subnet"
# aws-cdk-lib Vpc subnet logical ids: Vpc<Public|Private|Isolated>Subnet<N>Subnet<hash>.
_SUBNET_NUMBER = re.compile(r"Subnet(\d+)Subnet")
ROLLING = ("Version", "ReleaseVersion")
# createOnlyProperties of each type's CloudFormation resource schema (the CloudFormation registry
# schemas; tests/cli/test_replacements.py compares these with the copy cfn-lint ships), nested
# ones dotted: a change to one replaces the resource.
CREATE_ONLY_BY_TYPE: dict[str, tuple[str, ...]] = {
    NODEGROUP: (
        "AmiType",
        "CapacityType",
        "ClusterName",
        "DiskSize",
        "InstanceTypes",
        "NodeRole",
        "NodegroupName",
        "RemoteAccess",
        "Subnets",
    ),
    CLUSTER: (
        "AccessConfig.BootstrapClusterCreatorAdminPermissions",
        "BootstrapSelfManagedAddons",
        "EncryptionConfig",
        "KubernetesNetworkConfig.IpFamily",
        "KubernetesNetworkConfig.ServiceIpv4Cidr",
        "Name",
        "OutpostConfig",
        "RoleArn",
    ),
    "AWS::EC2::VPC": ("CidrBlock", "Ipv4IpamPoolId", "Ipv4NetmaskLength", "VpcEncryptionControl"),
    SUBNET: (
        "AvailabilityZone",
        "AvailabilityZoneId",
        "CidrBlock",
        "Ipv4IpamPoolId",
        "Ipv4NetmaskLength",
        "Ipv6IpamPoolId",
        "Ipv6NetmaskLength",
        "Ipv6Native",
        "OutpostArn",
        "VpcId",
    ),
    "AWS::EC2::NatGateway": (
        "AllocationId",
        "AvailabilityMode",
        "ConnectivityType",
        "PrivateIpAddress",
        "SubnetId",
        "VpcId",
    ),
    "AWS::EC2::EIP": ("Address", "IpamPoolId", "NetworkBorderGroup", "TransferAddress"),
    "AWS::EC2::RouteTable": ("VpcId",),
    "AWS::EC2::LaunchTemplate": ("LaunchTemplateName",),
}
CREATE_ONLY = CREATE_ONLY_BY_TYPE[NODEGROUP]
CAPACITY_BLOCK = "CAPACITY_BLOCK"


@dataclass(frozen=True)
class NodegroupLoss:
    """A node group the new template replaces, deletes, rolls or adds, and why; named as a user
    knows it (pool and instance types) and by logical id."""

    logical_id: str
    pool: str | None
    reasons: tuple[str, ...]
    capacity_block: bool = False
    instance_types: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"node group {self.logical_id} ({self.owner}): " + "; ".join(self.reasons)

    @property
    def owner(self) -> str:
        """The pool and instance types, as a user knows the group."""
        owner = f"pool {self.pool}" if self.pool else "not a gpu-pool pool"
        return owner + (f", {', '.join(self.instance_types)}" if self.instance_types else "")

    def scale_to_zero(self, stack: str, region: str | None) -> str:
        """The one command that scales the group to 0: its name from the stack (a managed node
        group's physical id is `cluster/nodegroup`, aws/aws-cdk#22442)."""
        option = f" --region {region}" if region else ""
        return (
            f"id=$(aws cloudformation describe-stack-resource{option} --stack-name {stack} "
            f"--logical-resource-id {self.logical_id} --query "
            "StackResourceDetail.PhysicalResourceId --output text) && aws eks "
            f'update-nodegroup-config{option} --cluster-name "${{id%%/*}}" --nodegroup-name '
            '"${id#*/}" --scaling-config minSize=0,desiredSize=0'
        )


@dataclass(frozen=True)
class Change:
    """A deployed resource other than a node group (the cluster, its network, a launch
    template) the new template replaces, deletes or changes in a way running work feels."""

    logical_id: str
    type: str
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.logical_id} ({self.type}): " + "; ".join(self.reasons)


def nodegroup_losses(deployed: dict[str, Any], new: dict[str, Any]) -> list[NodegroupLoss]:
    """Every node group of `deployed` that deploying `new` would replace or delete."""
    old_groups, new_groups = _nodegroups(deployed), _nodegroups(new)
    replaced = replacements(deployed, new)
    losses = []
    for logical_id, old in old_groups.items():
        if logical_id in new_groups:
            if logical_id in replaced:
                why = ("replaced", *replaced[logical_id])
                losses.append(_group(logical_id, old, why))
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
        losses.append(_group(logical_id, old, tuple(reasons)))
    return losses


def nodegroup_rolls(deployed: dict[str, Any], new: dict[str, Any]) -> list[NodegroupLoss]:
    """Node groups kept by `new` whose nodes it replaces one at a time (PDBs respected)."""
    old_groups, new_groups = _nodegroups(deployed), _nodegroups(new)
    replaced = replacements(deployed, new)
    rolls = []
    for logical_id, old in old_groups.items():
        now = new_groups.get(logical_id)
        if now is None or logical_id in replaced:
            continue
        old_data = _launch_template_data(deployed, old)
        new_data = _launch_template_data(new, now)
        changed = _changes(ROLLING, old, now) + _leaf_changes(
            "launch template ", old_data, new_data
        )
        if changed:
            rolls.append(_group(logical_id, old, ("rolled", *changed)))
    return rolls


# Node group properties EKS updates in place (UpdateNodegroupConfig: labels, taints, node repair;
# EKS API reference), with no node replaced.
IN_PLACE = ("Labels", "Taints", "NodeRepairConfig")


def nodegroup_updates(deployed: dict[str, Any], new: dict[str, Any]) -> list[NodegroupLoss]:
    """Node groups kept by `new` whose labels, taints or repair it changes: updated in place."""
    old_groups, new_groups = _nodegroups(deployed), _nodegroups(new)
    replaced = replacements(deployed, new)
    return [
        _group(logical_id, old, ("updated in place", *changed))
        for logical_id, old in old_groups.items()
        if (now := new_groups.get(logical_id)) is not None and logical_id not in replaced
        if (changed := _changes(IN_PLACE, old, now))
    ]


def nodegroup_additions(deployed: dict[str, Any], new: dict[str, Any]) -> list[NodegroupLoss]:
    """Node groups of `new` that `deployed` lacks: a new pool's, or the successor of a group
    deleted for a new instance type or zone."""
    old_groups = _nodegroups(deployed)
    return [
        _group(logical_id, props, ("added",))
        for logical_id, props in _nodegroups(new).items()
        if logical_id not in old_groups
    ]


def nodegroup_creations(
    deployed: dict[str, Any], new: dict[str, Any]
) -> list[tuple[str, str, str]]:
    """(logical id, cluster, version) of each node group the deploy creates, added or replaced,
    on a cluster the template names literally (an imported one), where it names its version."""
    old_groups, replaced = _nodegroups(deployed), replacements(deployed, new)
    return [
        (logical_id, props["ClusterName"], props["Version"])
        for logical_id, props in _nodegroups(new).items()
        if (logical_id not in old_groups or logical_id in replaced)
        and isinstance(props.get("ClusterName"), str)
        and isinstance(props.get("Version"), str)
    ]


def _group(logical_id: str, props: dict[str, Any], reasons: tuple[str, ...]) -> NodegroupLoss:
    types = props.get("InstanceTypes")
    names = tuple(t for t in types if isinstance(t, str)) if isinstance(types, list) else ()
    return NodegroupLoss(logical_id, _pool(props), reasons, _block(props), names)


# The pool setting behind a launch template value gpu-pool writes.
_LAUNCH_TEMPLATE_SETTINGS = {
    "VolumeSize": "disk_size_gib",
    "KmsKeyId": "volume_kms_key_arn",
    "HttpPutResponseHopLimit": "imds_hop_limit",
}


def _leaf_changes(path: str, old: Any, new: Any) -> list[str]:
    """`<path>: old -> new` for each value that differs, down to the changed leaf
    (`launch template BlockDeviceMappings[0].Ebs.VolumeSize (disk_size_gib): 200 -> 300`), not
    whole JSON documents; a list whose length changes is shown whole."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        dot = "" if path.endswith(" ") else "."
        return [
            line
            for key in sorted(old.keys() | new.keys())
            for line in _leaf_changes(f"{path}{dot}{key}", old.get(key), new.get(key))
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            line
            for index, (before, after) in enumerate(zip(old, new, strict=True))
            for line in _leaf_changes(f"{path}[{index}]", before, after)
        ]
    setting = _LAUNCH_TEMPLATE_SETTINGS.get(path.rsplit(".", 1)[-1])
    label = f"{path} ({setting})" if setting else path
    return [f"{label}: {_show(old)} -> {_show(new)}"]


def dependency_changes(deployed: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """The cluster, VPC, subnets, NAT gateways, EIPs, route tables and launch templates of
    `deployed` that deploying `new` replaces or deletes, and the cluster's subnets when it
    changes them in place (EKS moves its control-plane interfaces)."""
    old_resources, new_resources = _resources(deployed), _resources(new)
    replaced = replacements(deployed, new)
    changes = []
    for logical_id, old in old_resources.items():
        kind = old.get("Type")
        if kind == NODEGROUP or kind not in CREATE_ONLY_BY_TYPE:
            continue
        now = new_resources.get(logical_id)
        if now is None or now.get("Type") != kind:
            changes.append(Change(logical_id, kind, ("deleted",)))
        elif logical_id in replaced:
            changes.append(Change(logical_id, kind, ("replaced", *replaced[logical_id])))
        elif kind == CLUSTER:
            subnets = _subnet_ids_change(old, now, replaced)
            if subnets:
                changes.append(Change(logical_id, kind, ("updated in place", subnets)))
    return changes


def zone_change(deployed: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The zones of the VPC's subnets before and after, when the deploy changes them (both
    empty otherwise): the cause of every network and cluster change above."""
    before, after = _subnet_zones(deployed), _subnet_zones(new)
    return (before, after) if before and before != after else ([], [])


def auto_mode_switch(deployed: dict[str, Any], new: dict[str, Any]) -> bool | None:
    """True when the deploy turns EKS Auto Mode on for a deployed cluster, False when it turns
    it off, None when neither."""
    old_clusters = {k: r for k, r in _resources(deployed).items() if r.get("Type") == CLUSTER}
    for logical_id, old in old_clusters.items():
        now = _resources(new).get(logical_id)
        if now is None:
            continue
        was = _get(old.get("Properties", {}), "ComputeConfig.Enabled") is True
        will = _get(now.get("Properties", {}), "ComputeConfig.Enabled") is True
        if was != will:
            return will
    return None


def addon_additions(deployed: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The EKS add-ons the deploy creates, by name, with the cluster each names where it is
    literal (an imported cluster's), else the template's cluster; an add-on CloudFormation
    already manages is no addition."""
    managed = {
        resource.get("Properties", {}).get("AddonName")
        for resource in _resources(deployed).values()
        if resource.get("Type") == ADDON
    }
    added = []
    for resource in _resources(new).values():
        properties = resource.get("Properties", {})
        name = properties.get("AddonName")
        if resource.get("Type") != ADDON or not isinstance(name, str) or name in managed:
            continue
        cluster = properties.get("ClusterName")
        added.append((name, cluster if isinstance(cluster, str) else cluster_name(new)))
    return added


def cluster_name(template: dict[str, Any]) -> str | None:
    """The name of the template's EKS cluster, when it names one."""
    name = _cluster_properties(template).get("Name")
    return name if isinstance(name, str) else None


def cluster_minor(template: dict[str, Any]) -> str:
    """The Kubernetes minor of the template's EKS cluster; empty when it states none."""
    return str(_cluster_properties(template).get("Version", ""))


def _cluster_properties(template: dict[str, Any]) -> dict[str, Any]:
    """The Properties of the template's AWS::EKS::Cluster (a stack holds one at most)."""
    for resource in _resources(template).values():
        if resource.get("Type") == CLUSTER:
            properties = resource.get("Properties", {})
            return properties if isinstance(properties, dict) else {}
    return {}


def replacements(deployed: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each resource of a type in CREATE_ONLY_BY_TYPE that `new` keeps (same logical id and
    type) but replaces, with why: a create-only property's value changes, or it refers to a
    resource the deploy replaces (whose new physical id changes the value)."""
    old_resources, new_resources = _resources(deployed), _resources(new)
    kept = {
        logical_id: (old, new_resources[logical_id])
        for logical_id, old in old_resources.items()
        if old.get("Type") in CREATE_ONLY_BY_TYPE
        and new_resources.get(logical_id, {}).get("Type") == old.get("Type")
    }
    replaced: dict[str, tuple[str, ...]] = {}
    while True:
        found = {}
        for logical_id, (old, now) in kept.items():
            if logical_id in replaced:
                continue
            names = CREATE_ONLY_BY_TYPE[old["Type"]]
            old_props, new_props = old.get("Properties", {}), now.get("Properties", {})
            reasons = _changes(names, old_props, new_props) or [
                f"{name}: {', '.join(sorted(refs))} replaced"
                for name in names
                if (refs := _refs(_get(new_props, name)) & replaced.keys())
            ]
            if reasons:
                found[logical_id] = tuple(reasons)
        if not found:
            return replaced
        replaced.update(found)


def _subnet_ids_change(
    old: dict[str, Any], now: dict[str, Any], replaced: dict[str, tuple[str, ...]]
) -> str | None:
    path = "ResourcesVpcConfig.SubnetIds"
    before = _get(old.get("Properties", {}), path)
    after = _get(now.get("Properties", {}), path)
    if before != after:
        return f"{path}: {_show(before)} -> {_show(after)}"
    moved = sorted(_refs(after) & replaced.keys())
    return f"{path}: {', '.join(moved)} replaced" if moved else None


def _changes(
    names: Sequence[str], old: dict[str, Any], new: dict[str, Any], label: str = ""
) -> list[str]:
    """`<label><name>: old -> new` for each of `names` (dotted for nested) whose value differs."""
    return [
        f"{label}{name}: {_show(_get(old, name))} -> {_show(_get(new, name))}"
        for name in names
        if _get(old, name) != _get(new, name)
    ]


def _get(props: dict[str, Any], dotted: str) -> Any:
    value: Any = props
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _refs(value: Any) -> set[str]:
    """The logical ids `value` refers to with Ref or Fn::GetAtt."""
    if isinstance(value, list):
        return set().union(*map(_refs, value)) if value else set()
    if not isinstance(value, dict):
        return set()
    if set(value) == {"Ref"} and isinstance(value["Ref"], str):
        return {value["Ref"]}
    if set(value) == {"Fn::GetAtt"}:
        target = value["Fn::GetAtt"]
        return {str(target[0] if isinstance(target, list) else target).split(".")[0]}
    return set().union(*map(_refs, value.values())) if value else set()


def _launch_template_data(template: dict[str, Any], nodegroup: dict[str, Any]) -> dict[str, Any]:
    """The LaunchTemplateData of the template's launch template the node group refers to."""
    reference = nodegroup.get("LaunchTemplate", {}).get("Id")
    logical_id = reference.get("Ref") if isinstance(reference, dict) else None
    resource = template.get("Resources", {}).get(logical_id, {}) if logical_id else {}
    data = resource.get("Properties", {}).get("LaunchTemplateData", {})
    return data if isinstance(data, dict) else {}


def _resources(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    resources = template.get("Resources", {})
    return resources if isinstance(resources, dict) else {}


def _nodegroups(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource.get("Properties", {})
        for logical_id, resource in _resources(template).items()
        if resource.get("Type") == NODEGROUP
    }


def _subnet_zones(template: dict[str, Any]) -> list[str]:
    """The zones of the template's subnets, where they are literal (an environment-bound
    stack's), in the VPC's order: aws-cdk-lib's Vpc gives the Nth zone the subnets numbered N
    (`VpcPrivateSubnet<N>Subnet...`) and the Nth CIDR block of each subnet group, so the same
    zones in another order are other subnets."""
    numbered = [
        (_subnet_number(logical_id), position, resource.get("Properties", {}))
        for position, (logical_id, resource) in enumerate(_resources(template).items())
        if resource.get("Type") == SUBNET
    ]
    zones = [props.get("AvailabilityZone") for _, _, props in sorted(numbered, key=_by_number)]
    # A pool's Local Zone subnet is no zone of the VPC's (cdk/network/local_zones.py): it comes
    # and goes with the pool, and cluster.zones cannot keep it.
    return list(dict.fromkeys(z for z in zones if isinstance(z, str) and not is_local_zone(z)))


def _subnet_number(logical_id: str) -> int | None:
    found = _SUBNET_NUMBER.search(logical_id)
    return int(found.group(1)) if found else None


def _by_number(entry: tuple[int | None, int, dict[str, Any]]) -> tuple[int, int]:
    """Numbered subnets in their number's order, any other after them in template order."""
    number, position, _ = entry
    return (number if number is not None else 1 << 30, position)


def _block(props: dict[str, Any]) -> bool:
    return props.get("CapacityType") == CAPACITY_BLOCK


def _pool(props: dict[str, Any]) -> str | None:
    labels = props.get("Labels")
    pool = labels.get(POOL_LABEL) if isinstance(labels, dict) else None
    return pool if isinstance(pool, str) else None


def _show(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value, separators=(",", ":"))
