"""Guardrails for Karpenter pools: what would leave a NodePool unable to launch a GPU node, its
nodes unable to join, or the NodePool refused (aws/karpenter-provider-aws v1.14.1). Each rule
yields one Finding."""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.karpenter_api import karpenter_refuses
from gpu_pool.model.labels import kubelet_refuses
from gpu_pool.model.versions import (
    KARPENTER_AMI_ALIASES,
)
from gpu_pool.plan.karpenter import KarpenterPoolPlan


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
    for name in ("ami_release_version", "ami_type"):
        value = getattr(settings, name)
        if value is not None:
            yield warning(
                f"{prefix}.{name}",
                f"'{value}' is ignored with provisioner: karpenter, whose nodes take their AMI "
                "from karpenter.ami_alias (the family from ami_family, the variant from each "
                "instance type): remove it, and pin the AMI with karpenter.ami_alias",
            )
    yield from _check_labels(plan)
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


def _check_labels(plan: KarpenterPoolPlan) -> Iterator[Finding]:
    """Labels the API server or Karpenter refuses in a NodePool, and kubernetes.io/k8s.io
    labels the kubelet refuses: Karpenter passes the template's labels to --node-labels."""
    setting = f"{plan.setting}.labels"
    for key in plan.settings.labels:
        name = key.rsplit("/", 1)[-1]
        if karpenter_refuses(key):
            yield error(
                setting,
                f"'{key}' is reserved by Karpenter (kubernetes.io/hostname, and karpenter.sh and "
                "karpenter.k8s.aws keys other than their well-known labels): the API server "
                f"refuses the NodePool; use your own domain, e.g. example.com/{name}",
            )
        elif kubelet_refuses(key):
            yield error(
                setting,
                f"'{key}' is a kubernetes.io/k8s.io label the kubelet refuses in --node-labels, "
                "where Karpenter puts the pool's labels: every node would launch and never join; "
                f"use node.kubernetes.io/{name} or your own domain, e.g. example.com/{name}",
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
