"""A pool's node repair, resolved once (docs/gpu-health.md): what each provisioner is told.

- Node groups (cluster-autoscaler): EKS's NodeRepairConfig, with a threshold, a bound on
  parallel repairs and per-reason overrides (`RepairPlan` holds the resolved values).
- Karpenter: the controller's `nodeRepair` feature gate, on while a Karpenter pool of the
  cluster repairs; Karpenter's own waits and 20% threshold apply (no setting of them).
- Auto Mode: always on, not configurable (EKS user guide, "Automatically repair nodes in EKS
  clusters"); checks/repair.py refuses a setting it cannot honour.

The node monitoring agent that reports the conditions repair acts on is an EKS add-on, created
on every cluster the app creates (cdk/gpu_software/node_health.py), with the configuration
values here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.model.catalog import GpuInstanceType
from gpu_pool.model.node_health import (
    ACCELERATED_HARDWARE_READY,
    ACCELERATED_HARDWARE_WAIT_MINUTES,
    CONDITION_XIDS,
    KARPENTER_REBOOT_XIDS,
    REBOOT_XIDS,
    RepairAction,
    RepairPolicy,
    RepairRules,
)
from gpu_pool.plan.capacity import CapacityPlan
from gpu_pool.settings import PoolSettings
from gpu_pool.settings.field_types import Provisioner

NODE_MONITORING_AGENT_ADDON = "eks-node-monitoring-agent"
# The add-on's configuration values. Its node agent tolerates every taint by default, but its
# DCGM host engine, which reports the GPU faults (XIDs, NVLink, ECC), tolerates none
# (aws/eks-node-monitoring-agent v1.7.0 charts/eks-node-monitoring-agent/values.yaml:
# nodeAgent.tolerations [{operator: Exists}], dcgmAgent.tolerations []): on a GPU pool's
# tainted nodes it would not run. Both tolerate every taint, so the agent watches every GPU
# node whatever its pool's taints. Checked against the add-on's configuration schema for the
# pinned version (tests/unit/test_repair.py).
NODE_MONITORING_AGENT_CONFIGURATION: dict[str, Any] = {
    "dcgmAgent": {"tolerations": [{"operator": "Exists"}]},
}

# No threshold of our own by default: EKS's applies, which pauses repair only when more than 5
# nodes and more than 20% of the group are unhealthy (EKS user guide, "Automatically repair
# nodes in EKS clusters"). A percentage alone would stop repair for good in a small group: the
# NodeRepairConfig threshold is the count "above which node auto repair actions will stop"
# (EKS API reference, NodeRepairConfig), so one bad node of four (25%) would never be repaired.
# One node repaired at a time: each repair drains a node of a pool whose nodes are the
# expensive ones, and a Capacity Block frees its slot to a replacement one instance at a time.
DEFAULT_MAX_PARALLEL_COUNT = 1
# The reasons EKS repairs by reboot that the agent raises as a condition (model/node_health.py:
# EKS's reboot XIDs that the agent makes AcceleratedHardwareReady False at v1.7.0), overridden
# explicitly so an EKS default change cannot turn a reboot into a replacement unseen.
REBOOT_REASONS = tuple(f"NvidiaXID{xid}Error" for xid in sorted(REBOOT_XIDS & CONDITION_XIDS))
# UltraServer nodes (p6e-gb200) also reboot when the NVIDIA Fabric Manager is not running: a
# service a reboot restarts, which multi-node NVLink needs. Not NvidiaFabricError, which "persists
# across reboots and requires instance replacement" (the agent's reasons.yaml, v1.7.0), nor
# NvidiaNVLinkError: EKS replaces those, and the replacement launches into the same Capacity
# Block, whose instances share the UltraServer's domain (EC2 API reference, InstanceTopology
# capacityBlockId; docs/gpu-health.md).
ULTRASERVER_REBOOT_REASONS = ("FabricManagerNotRunning",)


@dataclass(frozen=True)
class RepairOverridePlan:
    """One per-reason override of EKS's repair (NodeRepairConfigOverrides)."""

    condition: str
    reason: str
    wait_minutes: int
    action: RepairAction


@dataclass(frozen=True)
class RepairPlan:
    """What repair does for a pool's nodes. The limits and overrides are set on node group pools
    only (exactly one of each count/percentage pair there); Karpenter and Auto Mode have their
    own. `reserved`: the pool runs on reserved capacity only, where a replacement has no room
    to launch before the old node goes (Karpenter 1.15's terminateFirstRepair is for them)."""

    provisioner: Provisioner
    enabled: bool
    reserved: bool = False
    max_unhealthy_count: int | None = None
    max_unhealthy_percentage: int | None = None
    max_parallel_count: int | None = None
    max_parallel_percentage: int | None = None
    overrides: tuple[RepairOverridePlan, ...] = ()

    def policy(self) -> RepairPolicy:
        """The model's view: on or off, whose rules decide, the actions the overrides set."""
        return RepairPolicy(
            enabled=self.enabled,
            rules=repair_rules(self.provisioner),
            actions={o.reason: o.action for o in self.overrides},
            waits={o.reason: o.wait_minutes for o in self.overrides},
            pause=self.pause(),
        )

    def pause(self) -> str:
        """When repair pauses, as a clause: Karpenter's 20% of a NodePool, a node group's own
        limit or EKS's (more than 5 nodes and more than 20%), Auto Mode's own."""
        if self.provisioner == "auto-mode":
            return "too many nodes are unhealthy (EKS Auto Mode's own limit)"
        if self.provisioner == "karpenter":
            return "more than 20% of the NodePool's nodes are unhealthy"
        if (self.max_unhealthy_count, self.max_unhealthy_percentage) == (None, None):
            return "more than 5 nodes and more than 20% of the node group are unhealthy"
        limit = _limit(self.max_unhealthy_count, self.max_unhealthy_percentage)
        return f"more than {limit} of the node group are unhealthy"

    def describe(self) -> str:
        """One line for `gpu-pool plan`."""
        if self.provisioner == "auto-mode":
            return "on (EKS Auto Mode: always, not configurable)"
        if not self.enabled:
            return "off"
        if self.provisioner == "karpenter":
            reboots = ", ".join(f"XID {xid}" for xid in sorted(KARPENTER_REBOOT_XIDS))
            return (
                f"on (Karpenter's nodeRepair: reboots on {reboots}; replaces on other faults; "
                "stops above 20% unhealthy)"
            )
        unhealthy = (
            "pauses as EKS does (more than 5 nodes and 20% unhealthy)"
            if (self.max_unhealthy_count, self.max_unhealthy_percentage) == (None, None)
            else f"stops above {_limit(self.max_unhealthy_count, self.max_unhealthy_percentage)}"
            " unhealthy"
        )
        parallel = _limit(self.max_parallel_count, self.max_parallel_percentage)
        overridden = [
            f"{verb} on {', '.join(reasons)}"
            for action, verb in _OVERRIDE_VERBS.items()
            if (
                reasons := [
                    _XID_ERROR.sub(r"XID \1", o.reason)
                    for o in self.overrides
                    if o.action is action
                ]
            )
        ]
        return "; ".join([f"on; {unhealthy}; {parallel} at a time", *overridden])


_XID_ERROR = re.compile(r"^NvidiaXID(\d+)Error$")
# How `describe` words each action of the overrides, in its order.
_OVERRIDE_VERBS = {
    RepairAction.REBOOT: "reboots",
    RepairAction.REPLACE: "replaces",
    RepairAction.NO_ACTION: "no action",
}


def repair_rules(provisioner: Provisioner) -> RepairRules:
    """Whose table a provisioner's repair follows."""
    if provisioner == "karpenter":
        return RepairRules.KARPENTER
    if provisioner == "auto-mode":
        return RepairRules.AUTO_MODE
    return RepairRules.NODE_GROUP


def _limit(count: int | None, percentage: int | None) -> str:
    if percentage is not None:
        return f"{percentage}%"
    return f"{count} node" + ("" if count == 1 else "s")


def repair_plan(
    settings: PoolSettings, instance_types: Sequence[GpuInstanceType], capacity: CapacityPlan
) -> RepairPlan:
    """The pool's repair: its settings, with gpu-pool's defaults where they leave a value
    unset (node groups only)."""
    repair = settings.repair
    reservation = capacity.reservation
    reserved = reservation is not None and reservation.fallback == "none"
    if settings.provisioner != "cluster-autoscaler":
        enabled = repair.enabled or settings.provisioner == "auto-mode"
        return RepairPlan(settings.provisioner, enabled, reserved=reserved)
    unhealthy = repair.max_unhealthy_count, repair.max_unhealthy_percentage
    parallel = repair.max_parallel_count, repair.max_parallel_percentage
    if parallel == (None, None):
        parallel = DEFAULT_MAX_PARALLEL_COUNT, None
    if repair.overrides is not None:
        overrides = tuple(
            RepairOverridePlan(o.condition, o.reason, o.wait_minutes, RepairAction(o.action))
            for o in repair.overrides
        )
    else:
        ultraserver = any(t.family.ultraserver for t in instance_types)
        reasons = REBOOT_REASONS + (ULTRASERVER_REBOOT_REASONS if ultraserver else ())
        overrides = tuple(
            RepairOverridePlan(
                ACCELERATED_HARDWARE_READY,
                reason,
                ACCELERATED_HARDWARE_WAIT_MINUTES,
                RepairAction.REBOOT,
            )
            for reason in reasons
        )
    return RepairPlan(
        settings.provisioner,
        repair.enabled,
        reserved=reserved,
        max_unhealthy_count=unhealthy[0],
        max_unhealthy_percentage=unhealthy[1],
        max_parallel_count=parallel[0],
        max_parallel_percentage=parallel[1],
        overrides=overrides,
    )


def needs_node_monitoring_agent(provisioners: Iterable[Provisioner]) -> bool:
    """Whether a cluster of pools of these provisioners needs the node monitoring agent add-on:
    a node group or Karpenter pool, whatever the order or the other pools; Auto Mode's nodes
    run their own agent (EKS user guide, "Automatically repair nodes")."""
    return any(provisioner != "auto-mode" for provisioner in provisioners)


def karpenter_repair_settings(repairs: Iterable[RepairPlan]) -> dict[str, Any]:
    """Karpenter's chart `settings` for repair, from the cluster's pools' `repairs` (Karpenter
    1.15.0 charts/karpenter/values.yaml; each gate is one per cluster). While a Karpenter pool
    repairs: `featureGates.nodeRepair`; `awsFeatureGates.rebootForRepair`, so that a
    reboot-clearable GPU fault reboots the node in place, as EKS does for node groups, instead
    of giving up the instance (the controller may reboot only its own instances:
    ec2:RebootInstances in cdk/karpenter/iam.py); and `featureGates.terminateFirstRepair` when
    one of them runs on reserved capacity alone, where a full block or reservation has no room
    to launch the replacement first (Karpenter applies it to capacity-constrained NodePools
    only). None of them otherwise: the chart's defaults, off. Helm merges these maps with the
    chart's, so the other gates keep their defaults."""
    karpenter = [r for r in repairs if r.provisioner == "karpenter" and r.enabled]
    if not karpenter:
        return {}
    gates: dict[str, bool] = {"nodeRepair": True}
    if any(r.reserved for r in karpenter):
        gates["terminateFirstRepair"] = True
    return {"featureGates": gates, "awsFeatureGates": {"rebootForRepair": True}}
