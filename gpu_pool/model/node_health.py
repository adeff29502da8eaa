"""GPU node health as the EKS node monitoring agent reports it, and what EKS repair does about it.

The agent (EKS add-on `eks-node-monitoring-agent`, aws/eks-node-monitoring-agent v1.7.0) keeps
one node condition per subsystem, True while healthy. A reason of severity Fatal in its
published list (pkg/reasons/reasons.yaml) sets the condition False with that reason; a Warning
is only an event (pkg/manager/node_exporter.go). Managed node groups, Karpenter and Auto Mode
repair a node whose condition stays False for the condition's wait (EKS user guide,
"Automatically repair nodes in EKS clusters"). `tests/unit/test_node_health.py` holds the
reasons named here to the agent's vendored list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

ACCELERATED_HARDWARE_READY = "AcceleratedHardwareReady"
# The agent's conditions (the top-level keys of its reasons.yaml).
AGENT_CONDITIONS = (
    ACCELERATED_HARDWARE_READY,
    "ContainerRuntimeReady",
    "KernelReady",
    "NetworkingReady",
    "StorageReady",
)


class RepairAction(StrEnum):
    """EKS's repair actions (EKS API NodeRepairConfigOverride.repairAction)."""

    REPLACE = "Replace"
    REBOOT = "Reboot"
    NO_ACTION = "NoAction"


# How long a condition stays False before repair acts, in minutes (EKS user guide, "Automatically
# repair nodes in EKS clusters", "Repair after"): the same on node groups, Karpenter and Auto Mode.
ACCELERATED_HARDWARE_WAIT_MINUTES = 10
OTHER_CONDITION_WAIT_MINUTES = 30
DEFAULT_WAIT_MINUTES: Mapping[str, int] = {
    condition: ACCELERATED_HARDWARE_WAIT_MINUTES
    if condition == ACCELERATED_HARDWARE_READY
    else OTHER_CONDITION_WAIT_MINUTES
    for condition in AGENT_CONDITIONS
}

# The XIDs the agent makes a condition of (NvidiaXID<n>Error, AcceleratedHardwareReady False);
# any other XID is an event only, NvidiaXID<n>Warning (v1.7.0 monitors/nvidia/dcgm/
# dcgm_policies.go:98, WellKnownXidCodes). Only these reach repair: a per-reason override for
# another XID never applies.
CONDITION_XIDS = frozenset(
    {46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158}
)
# The XIDs EKS repairs by reboot by default (EKS user guide, "Detect node health issues with the
# EKS node monitoring agent", NVIDIA XID error codes; "Automatically repair nodes" names 64 and
# 31). 13, 31 and 94 are not in the agent's CONDITION_XIDS at v1.7.0: the agent reports them as
# events, which no repair acts on.
REBOOT_XIDS = frozenset({13, 31, 48, 63, 64, 94, 95})
# AcceleratedHardwareReady reasons of NVIDIA GPUs other than XIDs that set the condition False,
# with EKS's default action (the same page's AcceleratedHardware table: Replace, or None for
# the DCGM reasons). NvidiaDeviceCountMismatch, NvidiaFabricError and FabricManagerNotRunning
# are Fatal at v1.7.0 but not in that table: EKS's action for the condition, Replace.
NVIDIA_CONDITION_REASONS: Mapping[str, RepairAction] = {
    "NvidiaDoubleBitError": RepairAction.REPLACE,
    "NvidiaNVLinkError": RepairAction.REPLACE,
    "NvidiaDeviceCountMismatch": RepairAction.REPLACE,
    "NvidiaFabricError": RepairAction.REPLACE,
    "FabricManagerNotRunning": RepairAction.REPLACE,
    "DCGMDiagnosticFailure": RepairAction.NO_ACTION,
    "DCGMError": RepairAction.NO_ACTION,
}
# DCGMHealthCode<n>: a failed DCGM health check, Fatal or Warning by code; no repair either way.
_DCGM_HEALTH_CODE = re.compile(r"DCGMHealthCode\d+")
_XID_ERROR = re.compile(r"NvidiaXID(\d+)Error")


def default_action(condition: str, reason: str) -> RepairAction:
    """EKS's default repair action for a condition False with `reason`: by reason for
    AcceleratedHardwareReady, Replace for the others."""
    if condition != ACCELERATED_HARDWARE_READY:
        return RepairAction.REPLACE
    xid = _XID_ERROR.fullmatch(reason)
    if xid is not None:
        return RepairAction.REBOOT if int(xid.group(1)) in REBOOT_XIDS else RepairAction.REPLACE
    if _DCGM_HEALTH_CODE.fullmatch(reason):
        return RepairAction.NO_ACTION
    return NVIDIA_CONDITION_REASONS.get(reason, RepairAction.REPLACE)


# Karpenter 1.15's repair of AcceleratedHardwareReady, by the XID in the reason (aws/karpenter-
# provider-aws v1.15.0 pkg/cloudprovider/cloudprovider.go RepairPolicies, the policies of node
# repair as a disruption method, the chart's default, not legacyNodeRepair): these XIDs after 10
# minutes, rebooting the node in place with the rebootForRepair gate that gpu-pool turns on
# (replacing it without); these replaced after 10 minutes; any other reason of the condition
# replaced after 30 minutes, as are the agent's other conditions. Karpenter's own table differs
# from EKS's for node groups: XID 64 is replaced, XID 46, 54, 62 and others rebooted.
KARPENTER_REBOOT_XIDS = frozenset({46, 48, 54, 62, 63, 95, 109, 110, 136, 140, 143, 155, 156, 158})
KARPENTER_REPLACE_XIDS = frozenset({64, 74, 79, 119, 120})
KARPENTER_OTHER_REASON_WAIT_MINUTES = 30


class RepairRules(StrEnum):
    """Whose table decides a repair's action and wait: EKS's for managed node groups (with a
    pool's overrides), Karpenter's own (with rebootForRepair), or Auto Mode's, which replaces
    where EKS would reboot (EKS user guide, "Automatically repair nodes")."""

    NODE_GROUP = "node-group"
    KARPENTER = "karpenter"
    AUTO_MODE = "auto-mode"


@dataclass(frozen=True)
class RepairPolicy:
    """What repair does for one pool's nodes: whether it runs, whose `rules` decide (RepairRules),
    the action and wait per reason where a setting overrides EKS's (node groups only), and when
    repair pauses."""

    enabled: bool
    rules: RepairRules
    actions: Mapping[str, RepairAction] = field(default_factory=dict)
    waits: Mapping[str, int] = field(default_factory=dict)
    # When repair pauses, as a clause ("more than 5 nodes and ... are unhealthy").
    pause: str = "too many of the pool's nodes are unhealthy"

    def wait_minutes(self, condition: str, reason: str) -> int:
        """How long the condition stays False with `reason` before repair acts."""
        if reason in self.waits:
            return self.waits[reason]
        karpenter = self.rules is RepairRules.KARPENTER
        if karpenter and condition == ACCELERATED_HARDWARE_READY and _karpenter_xid(reason) is None:
            return KARPENTER_OTHER_REASON_WAIT_MINUTES
        return DEFAULT_WAIT_MINUTES.get(condition, OTHER_CONDITION_WAIT_MINUTES)

    def action(self, condition: str, reason: str) -> RepairAction:
        if self.rules is RepairRules.KARPENTER:
            rebooted = condition == ACCELERATED_HARDWARE_READY and (
                _karpenter_xid(reason) in KARPENTER_REBOOT_XIDS
            )
            return RepairAction.REBOOT if rebooted else RepairAction.REPLACE
        action = self.actions.get(reason) or default_action(condition, reason)
        if action is RepairAction.REBOOT and self.rules is RepairRules.AUTO_MODE:
            return RepairAction.REPLACE
        return action


def _karpenter_xid(reason: str) -> int | None:
    """The XID of a reason Karpenter's table names (either list), else None."""
    xid = _XID_ERROR.fullmatch(reason)
    if xid is None:
        return None
    number = int(xid.group(1))
    return number if number in KARPENTER_REBOOT_XIDS | KARPENTER_REPLACE_XIDS else None
