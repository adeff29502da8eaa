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


@dataclass(frozen=True)
class RepairPolicy:
    """What repair does for one pool's nodes: whether it runs, how long each condition waits
    (EKS's defaults), the action per reason where a setting overrides EKS's, and whether the
    provisioner can reboot at all (EKS managed node groups; Karpenter and Auto Mode replace
    where EKS would reboot: EKS user guide, "Automatically repair nodes")."""

    enabled: bool
    reboots: bool
    waits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_WAIT_MINUTES))
    actions: Mapping[str, RepairAction] = field(default_factory=dict)
    # When repair pauses, as a clause ("more than 5 nodes and ... are unhealthy").
    pause: str = "too many of the pool's nodes are unhealthy"

    def wait_minutes(self, condition: str) -> int:
        return self.waits.get(condition, OTHER_CONDITION_WAIT_MINUTES)

    def action(self, condition: str, reason: str) -> RepairAction:
        action = self.actions.get(reason) or default_action(condition, reason)
        if action is RepairAction.REBOOT and not self.reboots:
            return RepairAction.REPLACE
        return action
