"""Guardrails for Karpenter pools: what would leave a NodePool unable to launch a GPU node, its
nodes unable to join, or the NodePool refused (aws/karpenter-provider-aws v1.14.1). Each rule
yields one Finding.

Karpenter's capacity of an instance type is EC2's figures alone (v1.14.1
pkg/providers/instancetype/types.go computeCapacity: cpu, memory, pods, GPUs, EFA, ...), with
no hugepages; NodeOverlay adds extended resources, behind the NodeOverlay feature gate, alpha
and false by default (website/content/en/docs/reference/settings.md, "Feature Gates")."""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.checks.node_pool import check_node_pool
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.versions import KARPENTER, KARPENTER_AMI_ALIASES
from gpu_pool.plan.karpenter import KarpenterPoolPlan


def check_karpenter_pool(plan: KarpenterPoolPlan) -> Iterator[Finding]:
    """Every rule about one Karpenter pool on its own."""
    prefix, settings = plan.setting, plan.settings
    for gpu_type in plan.instance_types:
        if not gpu_type.family.ec2_counts_gpus:
            yield error(
                "GP-KARP-01",
                f"{prefix}.instance_types",
                f"'{gpu_type.name}' ({gpu_type.family.note}) reports 0 GPUs in EC2's data, which "
                "is all Karpenter counts: it would never launch it for a pod requesting "
                "nvidia.com/gpu; use provisioner: cluster-autoscaler for "
                f"{gpu_type.family.family}, or a whole-GPU family such as g6",
            )
    for size in ("min_size", "desired_size"):
        if getattr(settings, size) > 0:
            yield warning(
                "GP-KARP-02",
                f"{prefix}.{size}",
                f"{getattr(settings, size)} is ignored with provisioner: karpenter, which "
                "launches nodes only for pending pods and keeps no minimum: leave it 0",
            )
    for name in ("ami_release_version", "ami_type"):
        value = getattr(settings, name)
        if value is not None:
            yield warning(
                "GP-KARP-03",
                f"{prefix}.{name}",
                f"'{value}' is ignored with provisioner: karpenter, whose nodes take their AMI "
                "from karpenter.ami_alias (the family from ami_family, the variant from each "
                "instance type): remove it, and pin the AMI with karpenter.ami_alias",
            )
    if plan.capacity.efa:
        yield warning(
            "GP-KARP-06",
            f"{prefix}.efa",
            "true with provisioner: karpenter, which counts only an instance type's own "
            "capacity, and hugepages are not part of it (they enter only through a NodeOverlay, "
            f"alpha and off by default in Karpenter {KARPENTER.version}): a pod requesting "
            "hugepages-2Mi never gets a node; let EFA pods request none and set "
            "FI_EFA_USE_HUGE_PAGE=0 in them, or use provisioner: cluster-autoscaler",
        )
    yield from _check_kept_nodes(plan)
    yield from check_node_pool(plan)
    yield from _check_alias(plan)


def _check_kept_nodes(plan: KarpenterPoolPlan) -> Iterator[Finding]:
    """A reserved-only pool's NodePool keeps its nodes (plan/karpenter.py): a disruption
    setting given for it would otherwise be dropped without a word."""
    if not plan.keeps_its_nodes:
        return
    karpenter = plan.settings.karpenter
    for name in ("consolidate_after", "expire_after"):
        value = getattr(karpenter, name)
        if name in karpenter.model_fields_set and value != "Never":
            yield warning(
                "GP-KARP-07",
                f"{plan.setting}.karpenter.{name}",
                f"{value} is not used: a pool of reserved capacity only keeps its nodes "
                "(Never: the reservation is paid for whether a node runs or not); remove it, "
                "or for an ODCR set capacity_reservation.fallback: on-demand, with which the "
                "pool's own disruption settings win",
            )


def _check_alias(plan: KarpenterPoolPlan) -> Iterator[Finding]:
    alias = plan.settings.karpenter.ami_alias
    if alias is None:
        return
    setting = f"{plan.setting}.karpenter.ami_alias"
    family, _, version = alias.partition("@")
    pinned = KARPENTER_AMI_ALIASES[plan.settings.ami_family]
    expected = pinned.partition("@")[0]
    if family != expected:
        yield error(
            "GP-KARP-04",
            setting,
            f"'{alias}' names AMI family {family} but ami_family is "
            f"{plan.settings.ami_family}: use {expected}@<version>",
        )
    if version == "latest":
        yield error(
            "GP-KARP-05",
            setting,
            f"'{alias}': every AMI release would replace every node of the pool (drift), "
            f"running jobs included; pin a release such as {pinned} and move it on purpose",
        )
