"""Guardrails for Karpenter pools: what would leave a NodePool unable to launch a GPU node, or
refused by Karpenter (../shared/FACTS.md, "Karpenter"). Each rule yields one Finding."""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.versions import (
    KARPENTER_AMI_ALIASES,
)
from gpu_pool.plan.karpenter import KarpenterPoolPlan

# Karpenter core's label rules (kubernetes-sigs/karpenter pkg/apis/v1/labels.go): these domains
# and their subdomains are Kubernetes' or Karpenter's own, except the listed subdomains and
# well-known labels; kubernetes.io/hostname is never allowed. A NodePool with such a template
# label fails validation and launches nothing.
_RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
_ALLOWED_SUBDOMAINS = (
    "kops.k8s.io",
    "node.kubernetes.io",
    "node-restriction.kubernetes.io",
    "node-role.kubernetes.io",
)
_WELL_KNOWN = (
    "karpenter.sh/nodepool",
    "karpenter.sh/capacity-type",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "node.kubernetes.io/windows-build",
)


def check_karpenter_pool(plan: KarpenterPoolPlan) -> Iterator[Finding]:
    """Every rule about one Karpenter pool on its own."""
    prefix, settings = plan.setting, plan.settings
    for gpu_type in plan.instance_types:
        if not gpu_type.family.ec2_counts_gpus:
            yield error(
                f"{prefix}.instance_types",
                f"'{gpu_type.name}' ({gpu_type.family.note}) reports 0 GPUs in EC2's data, which "
                "is all Karpenter counts: it would never launch it for a pod requesting "
                "nvidia.com/gpu; use provisioner: cluster-autoscaler for "
                f"{gpu_type.family.family}, or a whole-GPU family such as g6",
            )
    if settings.max_size < 1:
        yield error(
            f"{prefix}.max_size",
            f"{settings.max_size}: the NodePool's node limit; the pool could never run a GPU "
            "node: set 1 or more",
        )
    largest = max(plan.instance_types, key=lambda t: t.gpu_count, default=None)
    if largest is not None and plan.gpu_limit < largest.gpu_count:
        yield error(
            f"{prefix}.karpenter.gpu_limit",
            f"{plan.gpu_limit} is below the {largest.gpu_count} GPUs of {largest.name}: "
            f"Karpenter could never launch it: raise it to {largest.gpu_count} or more, or "
            "drop the type",
        )
    for size in ("min_size", "desired_size"):
        if getattr(settings, size) > 0:
            yield warning(
                f"{prefix}.{size}",
                f"{getattr(settings, size)} is ignored with provisioner: karpenter, which "
                "launches nodes only for pending pods and keeps no minimum: leave it 0",
            )
    for key in settings.labels:
        if _restricted_label(key):
            yield error(
                f"{prefix}.labels",
                f"'{key}' is in a label domain Karpenter reserves (kubernetes.io, k8s.io, "
                "karpenter.sh, karpenter.k8s.aws): its NodePool would fail validation and "
                "launch nothing; use your own domain, e.g. example.com/" + key.rsplit("/")[-1],
            )
    yield from _check_alias(plan)
    yield from _check_expiry(plan)


def _check_expiry(plan: KarpenterPoolPlan) -> Iterator[Finding]:
    """Expiry is forceful: neither do-not-disrupt nor budgets stop it, only the grace period
    ends it (disruption.md, "Expiration" and "Pod-Level Controls" at v1.14.1)."""
    karpenter = plan.settings.karpenter
    if karpenter.termination_grace_period is None and karpenter.expire_after != "Never":
        yield warning(
            f"{plan.setting}.karpenter.termination_grace_period",
            f"unset with expire_after {karpenter.expire_after}: an expired node is drained of "
            "all but its karpenter.sh/do-not-disrupt pods and then held, its free GPUs idle "
            "and billed, for as long as they run: set a duration such as 24h (the default), "
            "or expire_after: Never",
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
            setting,
            f"'{alias}' names AMI family {family} but ami_family is "
            f"{plan.settings.ami_family}: use {expected}@<version>",
        )
    if version == "latest":
        yield error(
            setting,
            f"'{alias}': every AMI release would replace every node of the pool (drift), "
            f"running jobs included; pin a release such as {pinned} and move it on purpose",
        )


def _restricted_label(key: str) -> bool:
    if "/" not in key:
        return False
    if key in _WELL_KNOWN:
        return False
    if key == "kubernetes.io/hostname":
        return True
    domain = key.split("/", 1)[0]

    def within(parent: str) -> bool:
        return domain == parent or domain.endswith("." + parent)

    if any(within(d) for d in _ALLOWED_SUBDOMAINS):
        return False
    return any(within(d) for d in _RESTRICTED_DOMAINS)
