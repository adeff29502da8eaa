"""Guardrails for EKS Auto Mode pools: what Auto Mode would not launch, settings it ignores or
overrides, and software it already runs (EKS user guide, automode/: create-node-pool.adoc,
create-node-class.adoc, automode-learn-instances.adoc, auto-accelerated.adoc, automode.adoc).
The NodePool rules every provisioner of NodePools shares are in checks/node_pool.py."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpu_pool.checks.node_pool import check_node_pool
from gpu_pool.model.auto_mode_api import GPU_FAMILIES, MAX_NODE_LIFETIME_HOURS
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
    if settings.gpu_software not in (None, "none"):
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
    yield from _check_lifetime(plan)
    yield from check_node_pool(plan)


def _check_lifetime(plan: AutoModePoolPlan) -> Iterator[Finding]:
    """Auto Mode replaces a node after at most 21 days, whatever its NodePool says."""
    hours = _hours(plan.expire_after)
    if hours is None or hours > MAX_NODE_LIFETIME_HOURS:
        yield error(
            "GP-AUTO-10",
            f"{plan.setting}.karpenter.expire_after",
            f"{plan.expire_after}, but Auto Mode replaces every node after at most 21 days "
            f"({MAX_NODE_LIFETIME_HOURS}h): set {MAX_NODE_LIFETIME_HOURS}h or less, or leave it "
            "unset for Auto Mode's 336h",
        )


def _hours(duration: str) -> float | None:
    """A Karpenter duration (1h30m, 720h) in hours; None for Never."""
    if duration == "Never":
        return None
    scale = {"h": 1.0, "m": 1 / 60, "s": 1 / 3600}
    return sum(int(n) * scale[unit] for n, unit in re.findall(r"([0-9]+)([hms])", duration))
