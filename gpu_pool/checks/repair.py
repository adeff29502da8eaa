"""Guardrails for node repair (docs/gpu-health.md): repair settings a provisioner cannot
honour, Karpenter's one cluster-wide gate, and an imported cluster without the node monitoring
agent repair acts on."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.versions import NODE_MONITORING_AGENT_ADDON_VERSION
from gpu_pool.plan.existing_cluster import needs_lookup
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.repair import NODE_MONITORING_AGENT_ADDON, NODE_MONITORING_AGENT_CONFIGURATION
from gpu_pool.settings import AppSettings
from gpu_pool.settings.repair import RepairSettings

_DEFAULTS = RepairSettings()


def check_repair(plan: PoolPlan, others: Sequence[PoolPlan]) -> Iterator[Finding]:
    """A pool's repair settings against what its provisioner can do, and a Karpenter pool's
    against the Karpenter pools before it (`others`)."""
    repair, prefix = plan.settings.repair, f"{plan.setting}.repair"
    changed = [
        name
        for name in repair.model_fields_set
        if getattr(repair, name) != getattr(_DEFAULTS, name)
    ]
    if plan.provisioner == "auto-mode" and changed:
        yield error(
            "GP-REPAIR-01",
            f"{prefix}.{sorted(changed)[0]}",
            "EKS Auto Mode always repairs its nodes, and its repair cannot be configured (EKS "
            'user guide, "Automatically repair nodes in EKS clusters"): remove repair',
        )
    if plan.provisioner != "karpenter":
        return
    for name in sorted(set(changed) - {"enabled"}):
        yield error(
            "GP-REPAIR-02",
            f"{prefix}.{name}",
            "Karpenter's node repair has no such setting (its waits and its 20% threshold are "
            "its own; gpu-pool turns it on or off): remove it, or use provisioner "
            "cluster-autoscaler, whose node groups take it",
        )
    karpenter = [o for o in others if o.provisioner == "karpenter"]
    differing = next((o for o in karpenter if o.repair.enabled != plan.repair.enabled), None)
    if differing is not None:
        yield error(
            "GP-REPAIR-03",
            f"{prefix}.enabled",
            f"{str(plan.repair.enabled).lower()}, but Karpenter pool '{differing.name}' has "
            f"{str(differing.repair.enabled).lower()}; Karpenter's nodeRepair feature gate is one "
            "per cluster, for every NodePool: give the cluster's Karpenter pools the same value",
        )


def check_agent_installed(settings: AppSettings, plans: Sequence[PoolPlan]) -> Iterator[Finding]:
    """An imported cluster whose pools repair, and no word on the node monitoring agent:
    repair acts only on the conditions the agent sets. A cluster the stack looks up is not
    judged: its add-ons are looked up, and the agent created where missing."""
    existing = settings.cluster.existing
    if existing is None or existing.node_monitoring_agent is not None or needs_lookup(existing):
        return
    repairing = [p.name for p in plans if p.repair.enabled and p.provisioner != "auto-mode"]
    if not repairing:
        return
    configuration = json.dumps(NODE_MONITORING_AGENT_CONFIGURATION, separators=(",", ":"))
    yield warning(
        "GP-REPAIR-04",
        "cluster.existing.node_monitoring_agent",
        f"unset, and pool(s) {', '.join(repairing)} repair their nodes, which works only where "
        "the EKS node monitoring agent reports their health: set true to create its add-on, "
        "or false where the cluster has it (or once you install it: aws eks create-addon "
        f"--cluster-name {settings.cluster.name} --addon-name {NODE_MONITORING_AGENT_ADDON} "
        f"--addon-version {NODE_MONITORING_AGENT_ADDON_VERSION} --configuration-values "
        f"'{configuration}')",
    )
