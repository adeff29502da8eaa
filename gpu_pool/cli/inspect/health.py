"""GPU health of a pool's nodes: the EKS node monitoring agent's conditions, read from the
Kubernetes client's V1Node and V1NodeCondition, and what the pool's repair does about them
(gpu_pool/model/node_health.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gpu_pool.cli.inspect.cluster import Verdict
from gpu_pool.model.node_health import (
    ACCELERATED_HARDWARE_READY,
    AGENT_CONDITIONS,
    RepairAction,
    RepairPolicy,
)
from gpu_pool.plan.record import PoolRecord
from gpu_pool.plan.repair import repair_rules

# verify's stage when the smoke pod lands on a node whose GPU the agent reports unhealthy.
HEALTH_STAGE = "gpu healthy"
AGENT_ADDON = "eks-node-monitoring-agent"


def utc_now() -> datetime:
    """The time conditions are aged against: the one seam tests pin, since the API server's
    lastTransitionTime is wall-clock time."""
    return datetime.now(UTC)


def repair_policy(pool: PoolRecord) -> RepairPolicy:
    """The pool's repair, the one place the command reads it: the record's resolved repair
    (plan/repair.py). A record written before repair existed describes a pool deployed without
    it: Auto Mode repairs always (EKS user guide, "Automatically repair nodes"); node groups
    had no NodeRepairConfig and Karpenter no nodeRepair gate, so neither repairs."""
    if pool.repair is not None:
        return pool.repair.policy()
    return RepairPolicy(
        enabled=pool.provisioner == "auto-mode", rules=repair_rules(pool.provisioner)
    )


def health_verdicts(pool: PoolRecord, nodes: list[Any], cluster: str) -> list[Verdict]:
    """Each node (V1Node) of the pool: its AcceleratedHardwareReady condition True, or a
    warning where the agent does not report it; then each agent condition that is not True,
    with its reason, for how long and what repair does."""
    policy, now = repair_policy(pool), utc_now()
    verdicts = []
    for node in nodes:
        name = node.metadata.name
        conditions = {c.type: c for c in node.status.conditions or []}
        gpu = conditions.get(ACCELERATED_HARDWARE_READY)
        if gpu is None:
            verdicts.append(_not_watched(pool, name, cluster))
        elif gpu.status == "True":
            repair = "on" if policy.enabled else "off"
            verdicts.append(
                Verdict(
                    "ok",
                    f"health {name}",
                    f"{ACCELERATED_HARDWARE_READY}=True ({gpu.reason}); repair {repair}",
                )
            )
        verdicts += [
            _unhealthy_verdict(pool, policy, name, conditions[c], now)
            for c in AGENT_CONDITIONS
            if c in conditions and conditions[c].status != "True"
        ]
    return verdicts


def gpu_fault(pool: PoolRecord, node: Any) -> Verdict | None:
    """The verdict on the node's AcceleratedHardwareReady when the agent set it False (a GPU
    fault); None otherwise."""
    condition = next(
        (c for c in node.status.conditions or [] if c.type == ACCELERATED_HARDWARE_READY), None
    )
    if condition is None or condition.status != "False":
        return None
    return _unhealthy_verdict(pool, repair_policy(pool), node.metadata.name, condition, utc_now())


def _unhealthy_verdict(
    pool: PoolRecord, policy: RepairPolicy, node: str, condition: Any, now: datetime
) -> Verdict:
    """A condition that is not True: its reason and message, for how long, and what repair
    does: off, nothing for this reason, an action after the condition's wait, or overdue."""
    since = condition.last_transition_time
    minutes = None if since is None else int((now - since).total_seconds() // 60)
    seen = f"{condition.type}={condition.status}" + (
        f" for {minutes} min" if minutes is not None else ""
    )
    reason = condition.reason or "no reason given"
    detail = f"{seen}: {reason}" + (f" ({condition.message})" if condition.message else "")
    cordon = f"kubectl cordon {node}"
    action = policy.action(condition.type, reason)
    wait = policy.wait_minutes(condition.type, reason)
    if condition.status != "False":
        repair, fix = (
            "the agent's state is not known",
            f"kubectl describe node {node}: whether the node and its {AGENT_ADDON} pod run",
        )
    elif not policy.enabled:
        repair, fix = (
            f"repair is off for pool {pool.name}",
            f"{cordon}, drain it and replace its instance; with repair on for the pool EKS "
            "does that itself",
        )
    elif action is RepairAction.NO_ACTION:
        repair, fix = (
            f"repair takes no action on {reason}",
            f"if the fault stays (for a DCGM reason: dcgmi diag -r 2 on the node), {cordon}, "
            "drain it and replace its instance",
        )
    elif minutes is not None and minutes > wait:
        repair, fix = (
            f"repair ({action.lower()} after {wait} min) is {minutes - wait} min overdue",
            f"repair pauses while {policy.pause} (kubectl get nodes); otherwise {cordon}, "
            "drain it and replace its instance",
        )
    else:
        repair, fix = (
            f"repair will {action.lower()} it after {wait} min",
            f"{cordon} keeps new pods off it until then",
        )
    status = "fail" if condition.status == "False" else "warn"
    return Verdict(status, f"health {node}", f"{detail}; {repair}", fix)


def _not_watched(pool: PoolRecord, node: str, cluster: str) -> Verdict:
    """A GPU node without AcceleratedHardwareReady: no agent watches its GPUs, so no repair
    sees a GPU fault there. Auto Mode's nodes include the agent (EKS best practices guide,
    Auto Mode, "Run the Node Monitoring Agent")."""
    fix = (
        "Auto Mode's nodes run the agent themselves: kubectl describe node " + node
        if pool.provisioner == "auto-mode"
        else f"install the EKS add-on {AGENT_ADDON} (aws eks create-addon --cluster-name "
        f"{cluster} --addon-name {AGENT_ADDON}), or see why its pod does not run on the node "
        f"(kubectl get pods -A -o wide | grep {AGENT_ADDON})"
    )
    return Verdict(
        "warn",
        f"health {node}",
        f"no {ACCELERATED_HARDWARE_READY} condition: the EKS node monitoring agent does not "
        "watch its GPUs",
        fix,
    )
