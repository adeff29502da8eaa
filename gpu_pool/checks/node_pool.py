"""Guardrails for any pool that is a karpenter.sh/v1 NodePool, whoever runs it (Karpenter or
EKS Auto Mode): limits it could never launch within, labels the API server or the kubelet
refuses, and expiry without a bound (aws/karpenter-provider-aws v1.14.1)."""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.karpenter_api import karpenter_refuses
from gpu_pool.model.labels import kubelet_refuses
from gpu_pool.plan.auto_mode import AutoModePoolPlan
from gpu_pool.plan.karpenter import KarpenterPoolPlan


def check_node_pool(plan: KarpenterPoolPlan | AutoModePoolPlan) -> Iterator[Finding]:
    """The rules every NodePool pool shares."""
    prefix, settings = plan.setting, plan.settings
    if settings.max_size < 1:
        yield error(
            "GP-NODEPOOL-01",
            f"{prefix}.max_size",
            f"{settings.max_size}: the NodePool's node limit; the pool could never run a GPU "
            "node: set 1 or more",
        )
    largest = max(plan.instance_types, key=lambda t: t.gpu_count, default=None)
    if largest is not None and plan.gpu_limit < largest.gpu_count:
        yield error(
            "GP-NODEPOOL-02",
            f"{prefix}.karpenter.gpu_limit",
            f"{plan.gpu_limit} is below the {largest.gpu_count} GPUs of {largest.name}: "
            f"Karpenter could never launch it: raise it to {largest.gpu_count} or more, or "
            "drop the type",
        )
    yield from _check_labels(plan)
    yield from _check_expiry(plan)


def _check_expiry(plan: KarpenterPoolPlan | AutoModePoolPlan) -> Iterator[Finding]:
    """Expiry is forceful: neither do-not-disrupt nor budgets stop it, only the grace period
    ends it (disruption.md, "Expiration" and "Pod-Level Controls" at v1.14.1)."""
    grace = plan.settings.karpenter.termination_grace_period
    if grace is None and plan.expire_after != "Never":
        yield warning(
            "GP-NODEPOOL-03",
            f"{plan.setting}.karpenter.termination_grace_period",
            f"unset with expire_after {plan.expire_after}: an expired node is drained of "
            "all but its karpenter.sh/do-not-disrupt pods and then held, its free GPUs idle "
            "and billed, for as long as they run: set a duration such as 24h (the default), "
            "or expire_after: Never",
        )


def _check_labels(plan: KarpenterPoolPlan | AutoModePoolPlan) -> Iterator[Finding]:
    """Labels the API server or Karpenter refuses in a NodePool, and kubernetes.io/k8s.io
    labels the kubelet refuses: Karpenter passes the template's labels to --node-labels."""
    setting = f"{plan.setting}.labels"
    for key in plan.settings.labels:
        name = key.rsplit("/", 1)[-1]
        if karpenter_refuses(key):
            yield error(
                "GP-NODEPOOL-04",
                setting,
                f"'{key}' is reserved by Karpenter (kubernetes.io/hostname, and karpenter.sh and "
                "karpenter.k8s.aws keys other than their well-known labels): the API server "
                f"refuses the NodePool; use your own domain, e.g. example.com/{name}",
            )
        elif kubelet_refuses(key):
            yield error(
                "GP-NODEPOOL-05",
                setting,
                f"'{key}' is a kubernetes.io/k8s.io label the kubelet refuses in --node-labels, "
                "where Karpenter puts the pool's labels: every node would launch and never join; "
                f"use node.kubernetes.io/{name} or your own domain, e.g. example.com/{name}",
            )
