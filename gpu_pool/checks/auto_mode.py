"""Guardrails for EKS Auto Mode pools: what Auto Mode would not launch, settings it ignores or
overrides, and software it already runs (EKS user guide, automode/: create-node-pool.adoc,
create-node-class.adoc, automode-learn-instances.adoc, auto-accelerated.adoc, automode.adoc).
The NodePool rules every provisioner of NodePools shares are in checks/node_pool.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping

from gpu_pool.checks.node_pool import check_node_pool
from gpu_pool.model.auto_mode_api import (
    GPU_FAMILIES,
    MAX_NODE_LIFETIME_HOURS,
    node_class_tags_statement,
    volume_key_statements,
)
from gpu_pool.model.aws_names import is_local_zone
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.plan.auto_mode import AutoModePoolPlan


def check_auto_mode_pool(plan: AutoModePoolPlan) -> Iterator[Finding]:
    """Every rule about one Auto Mode pool on its own."""
    prefix, settings = plan.setting, plan.settings
    for gpu_type in plan.instance_types:
        family = gpu_type.family
        if not family.ec2_counts_gpus:
            yield error(
                "GP-AUTO-01",
                f"{prefix}.instance_types",
                f"'{gpu_type.name}' ({family.note}) reports 0 GPUs in EC2's data and Auto Mode "
                f"does not offer {family.family}: use provisioner: cluster-autoscaler for it",
            )
        elif family.family not in GPU_FAMILIES:
            yield error(
                "GP-AUTO-02",
                f"{prefix}.instance_types",
                f"Auto Mode does not launch {family.family} ({gpu_type.name}); its NVIDIA "
                f"families are {', '.join(sorted(GPU_FAMILIES))}: use one of them, or another "
                "provisioner",
            )
    if "ami_family" in settings.model_fields_set and settings.ami_family != "BOTTLEROCKET":
        yield error(
            "GP-AUTO-03",
            f"{prefix}.ami_family",
            f"{settings.ami_family}, but Auto Mode nodes run Bottlerocket, chosen and patched by "
            "EKS: remove ami_family",
        )
    ignored = {
        "ami_type": settings.ami_type,
        "ami_release_version": settings.ami_release_version,
        "karpenter.ami_alias": settings.karpenter.ami_alias,
    }
    for name, value in ignored.items():
        if value is not None:
            yield warning(
                "GP-AUTO-04",
                f"{prefix}.{name}",
                f"'{value}' is ignored with provisioner: auto-mode, whose AMIs EKS chooses and "
                "patches itself: remove it",
            )
    if settings.min_size > 0:
        yield error(
            "GP-AUTO-05",
            f"{prefix}.min_size",
            f"{settings.min_size}: an Auto Mode NodePool launches nodes only for pending pods "
            "and keeps no minimum (static capacity is not built by gpu-pool): set 0, or use "
            "provisioner: cluster-autoscaler for nodes that stay up",
        )
    if settings.desired_size > 0:
        yield warning(
            "GP-AUTO-06",
            f"{prefix}.desired_size",
            f"{settings.desired_size} is ignored with provisioner: auto-mode, which launches "
            "nodes only for pending pods: leave it 0",
        )
    # The DRA driver on Auto Mode is GP-DRA-02's (checks/dra.py).
    if settings.gpu_software not in (None, "none", "dra-driver"):
        yield error(
            "GP-AUTO-07",
            f"{prefix}.gpu_software",
            f"'{settings.gpu_software}', but Auto Mode runs the NVIDIA driver and device plugin "
            "itself (not as a visible DaemonSet); a second plugin would fight it: remove "
            "gpu_software",
        )
    if settings.imds_hop_limit != 1:
        yield error(
            "GP-AUTO-08",
            f"{prefix}.imds_hop_limit",
            f"{settings.imds_hop_limit}, but Auto Mode enforces a hop limit of 1 and it cannot "
            "be changed: remove imds_hop_limit, or use another provisioner for a workload that "
            "reads instance metadata",
        )
    for name in ("capacity_reservation", "efa"):
        if getattr(settings, name):
            yield error(
                "GP-AUTO-09",
                f"{prefix}.{name}",
                "is not built for provisioner: auto-mode (its NodeClass takes reservations and "
                "placement groups, but gpu-pool renders neither there yet): use provisioner: "
                "karpenter or cluster-autoscaler for a training pool (docs/training.md)",
            )
    local_zones = [zone for zone in settings.zones if is_local_zone(zone)]
    if local_zones:
        yield error(
            "GP-AUTO-14",
            f"{prefix}.zones",
            f"{', '.join(local_zones)}: a Local Zone, where EKS Auto Mode cannot run nodes (EKS "
            'user guide, "Manage compute resources by using nodes", Compare compute options: '
            "Auto Mode cannot be deployed to an AWS Local Zone): its NodeClass would get the "
            "zone's subnet and no node would launch; use provisioner: cluster-autoscaler or "
            "karpenter there, or list Availability Zones only",
        )
    yield from _check_lifetime(plan)
    # An unset grace period is an error here (GP-AUTO-11), not the warning Karpenter pools get,
    # whose way out (expire_after: Never) Auto Mode refuses.
    yield from (f for f in check_node_pool(plan) if f.rule != "GP-NODEPOOL-03")


def _check_lifetime(plan: AutoModePoolPlan) -> Iterator[Finding]:
    """Auto Mode replaces a node after at most 21 days, whatever its NodePool says, and an
    expired node drains for up to terminationGracePeriod before it goes: expiry and grace
    period together are a node's longest life (Karpenter v1.14.1 disruption.md, "Expiration"),
    so the two must fit in the 21 days."""
    limit = MAX_NODE_LIFETIME_HOURS
    expire = _hours(plan.expire_after)
    if expire is None or expire > limit:
        yield error(
            "GP-AUTO-10",
            f"{plan.setting}.karpenter.expire_after",
            f"{plan.expire_after}, but Auto Mode replaces every node after at most 21 days "
            f"({limit}h): set {limit}h or less, or leave it unset for Auto Mode's 336h",
        )
    grace_period = plan.settings.karpenter.termination_grace_period
    grace = None if grace_period is None else _hours(grace_period)
    expires = expire is not None and expire <= limit
    if grace is not None and (not expires or (expire or 0) + grace <= limit):
        return  # fits, or GP-AUTO-10 has said what expiry to set
    if grace is None:
        drains = "drain without end"
    else:
        drains = f"drain that long more, {_duration((expire or 0) + grace)} in all"
    bounds = [
        f"{name} to {_duration(limit - hours)} or less"
        for name, hours in (("termination_grace_period", expire), ("expire_after", grace))
        if hours is not None and hours < limit
    ]
    yield error(
        "GP-AUTO-11",
        f"{plan.setting}.karpenter.termination_grace_period",
        f"{grace_period or 'unset'} with expire_after {plan.expire_after}: an expired node may "
        f"{drains}, but Auto Mode replaces every node after at most 21 days ({limit}h): set "
        + (", or ".join(bounds) if bounds else "a duration such as 24h (the default)"),
    )


def check_cluster_role(
    plan: AutoModePoolPlan, node_class_tags: Mapping[str, str], role_is_the_apps: bool
) -> Iterator[Finding]:
    """What the cluster role needs for the pool that the app cannot give it: Auto Mode launches
    the nodes, tags them and encrypts their volumes as the cluster role. On a cluster the app
    creates (`role_is_the_apps`) the pool construct grants the NodeClass's tags and a key given
    by its ARN; another cluster's role is not the app's to change, nor a key named by an alias.
    Only the construct knows the cluster and the tags, so it runs this rule."""
    if node_class_tags and not role_is_the_apps:
        yield warning(
            "GP-AUTO-12",
            "tags",
            f"{', '.join(sorted(node_class_tags))} on the pool's NodeClass: Auto Mode launches "
            "nodes as the cluster role, whose AmazonEKSComputePolicy allows EKS's own tags "
            "only, and the app changes only a cluster role it creates: "
            "without this statement on that role (aws eks describe-cluster: cluster.roleArn) "
            "no node of the pool launches: "
            f"{json.dumps(node_class_tags_statement(), separators=(',', ':'))}; or pass no tags",
        )
    key = plan.settings.volume_kms_key_arn
    if key is not None and (not role_is_the_apps or plan.volume_key_arn is None):
        reason = (
            "the app grants a key only by its ARN, not an alias"
            if role_is_the_apps
            else "the app changes only a cluster role it creates"
        )
        statements = volume_key_statements("<the cluster role's ARN>", "*")
        yield warning(
            "GP-AUTO-13",
            f"{plan.setting}.volume_kms_key_arn",
            "Auto Mode encrypts the nodes' volumes as the cluster role (aws eks "
            f"describe-cluster: cluster.roleArn) and {reason}: unless the key policy has these "
            "statements (or delegates to IAM and the role's own policy allows the same on the "
            f"key), no node of the pool launches: {json.dumps(statements, separators=(',', ':'))}",
        )


def _hours(duration: str) -> float | None:
    """A Karpenter duration (1h30m, 720h) in hours; None for Never."""
    if duration == "Never":
        return None
    scale = {"h": 1.0, "m": 1 / 60, "s": 1 / 3600}
    return sum(int(n) * scale[unit] for n, unit in re.findall(r"([0-9]+)([hms])", duration))


def _duration(hours: float) -> str:
    """Hours as a Karpenter duration: 480h, 23h59m, 504h0m1s."""
    minutes, seconds = divmod(round(hours * 3600), 60)
    whole_hours, minutes = divmod(minutes, 60)
    if seconds:
        return f"{whole_hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{whole_hours}h{minutes}m"
    return f"{whole_hours}h"
