"""gpu_pool/model/node_health.py against the EKS node monitoring agent's own reason list
(tests/fixtures/node-monitoring-agent-reasons-1.7.0/reasons.yaml, vendored unchanged): every
reason the product names is one the agent gives under that condition, with the severity that
sets the condition False."""

from __future__ import annotations

import re

import pytest
import yaml

from gpu_pool.model.node_health import (
    ACCELERATED_HARDWARE_READY,
    AGENT_CONDITIONS,
    CONDITION_XIDS,
    DEFAULT_WAIT_MINUTES,
    NVIDIA_CONDITION_REASONS,
    REBOOT_XIDS,
    RepairAction,
    RepairPolicy,
    RepairRules,
    default_action,
)
from tests.support.paths import FIXTURES

REASONS = yaml.safe_load(
    (FIXTURES / "node-monitoring-agent-reasons-1.7.0" / "reasons.yaml").read_text()
)


def severities(condition: str, reason: str) -> set[str]:
    """The agent's default severities of `reason` under `condition`: those of the entries whose
    name template (%d a number, %s a unit name) matches it (DCGMHealthCode<n> is both)."""
    return {
        entry["DefaultSeverity"]
        for entry in REASONS[condition].values()
        if re.fullmatch(
            re.escape(entry["Template"]).replace("%d", r"\d+").replace("%s", ".+"), reason
        )
    }


def test_the_agent_conditions_are_the_agents():
    assert set(AGENT_CONDITIONS) == set(REASONS)


@pytest.mark.parametrize("reason", sorted(NVIDIA_CONDITION_REASONS))
def test_each_named_gpu_reason_sets_the_condition(reason):
    assert severities(ACCELERATED_HARDWARE_READY, reason) == {"Fatal"}


@pytest.mark.parametrize("xid", sorted(CONDITION_XIDS | REBOOT_XIDS))
def test_each_named_xid_is_the_agents_fatal_xid_reason(xid):
    assert severities(ACCELERATED_HARDWARE_READY, f"NvidiaXID{xid}Error") == {"Fatal"}
    assert severities(ACCELERATED_HARDWARE_READY, f"NvidiaXID{xid}Warning") == {"Warning"}


def test_eks_reboots_for_xids_the_agent_at_1_7_0_reports_only_as_events():
    """EKS's reboot list names 13, 31 and 94, which agent 1.7.0 never makes a condition of:
    a repair override for them has nothing to act on."""
    assert sorted(REBOOT_XIDS - CONDITION_XIDS) == [13, 31, 94]


ACTIONS = {
    # EKS user guide, "Detect node health issues with the EKS node monitoring agent".
    (ACCELERATED_HARDWARE_READY, "NvidiaXID64Error"): RepairAction.REBOOT,
    (ACCELERATED_HARDWARE_READY, "NvidiaXID48Error"): RepairAction.REBOOT,
    (ACCELERATED_HARDWARE_READY, "NvidiaXID79Error"): RepairAction.REPLACE,
    (ACCELERATED_HARDWARE_READY, "NvidiaXID46Error"): RepairAction.REPLACE,
    (ACCELERATED_HARDWARE_READY, "NvidiaNVLinkError"): RepairAction.REPLACE,
    (ACCELERATED_HARDWARE_READY, "DCGMDiagnosticFailure"): RepairAction.NO_ACTION,
    (ACCELERATED_HARDWARE_READY, "DCGMHealthCode3"): RepairAction.NO_ACTION,
    ("NetworkingReady", "IPAMDNotRunning"): RepairAction.REPLACE,
}


@pytest.mark.parametrize(("condition", "reason", "action"), [(*k, v) for k, v in ACTIONS.items()])
def test_eks_default_action_per_reason(condition, reason, action):
    assert "Fatal" in severities(condition, reason)  # one that sets the condition False
    assert default_action(condition, reason) is action


def test_default_waits_are_ten_minutes_for_gpus_and_thirty_for_the_rest():
    assert DEFAULT_WAIT_MINUTES == {
        "AcceleratedHardwareReady": 10,
        "ContainerRuntimeReady": 30,
        "KernelReady": 30,
        "NetworkingReady": 30,
        "StorageReady": 30,
    }


def test_auto_mode_replaces_where_eks_reboots_and_a_node_groups_overrides_win():
    policy = RepairPolicy(enabled=True, rules=RepairRules.AUTO_MODE)
    assert policy.action(ACCELERATED_HARDWARE_READY, "NvidiaXID64Error") is RepairAction.REPLACE
    assert policy.action(ACCELERATED_HARDWARE_READY, "DCGMError") is RepairAction.NO_ACTION
    assert policy.wait_minutes(ACCELERATED_HARDWARE_READY, "NvidiaXID64Error") == 10
    overridden = RepairPolicy(
        enabled=True,
        rules=RepairRules.NODE_GROUP,
        waits={"NvidiaXID64Error": 5},
        actions={"NvidiaXID64Error": RepairAction.REPLACE},
    )
    assert overridden.action(ACCELERATED_HARDWARE_READY, "NvidiaXID64Error") is (
        RepairAction.REPLACE
    )
    assert overridden.action(ACCELERATED_HARDWARE_READY, "NvidiaXID48Error") is (
        RepairAction.REBOOT
    )
    assert overridden.wait_minutes(ACCELERATED_HARDWARE_READY, "NvidiaXID64Error") == 5
    assert overridden.wait_minutes(ACCELERATED_HARDWARE_READY, "NvidiaXID48Error") == 10
    assert overridden.wait_minutes("KernelReady", "KernelBug") == 30


@pytest.mark.parametrize(
    ("condition", "reason", "node_group", "karpenter"),
    [
        # EKS reboots 48 and 64; Karpenter 1.15 reboots 48 and replaces 64 (its own table).
        (ACCELERATED_HARDWARE_READY, "NvidiaXID48Error", ("Reboot", 10), ("Reboot", 10)),
        (ACCELERATED_HARDWARE_READY, "NvidiaXID64Error", ("Reboot", 10), ("Replace", 10)),
        # EKS replaces 46 and 54; Karpenter reboots them.
        (ACCELERATED_HARDWARE_READY, "NvidiaXID46Error", ("Replace", 10), ("Reboot", 10)),
        (ACCELERATED_HARDWARE_READY, "NvidiaXID54Error", ("Replace", 10), ("Reboot", 10)),
        (ACCELERATED_HARDWARE_READY, "NvidiaXID79Error", ("Replace", 10), ("Replace", 10)),
        # A reason outside Karpenter's XID lists: its fallback, replaced after 30 minutes; EKS
        # takes no action on a DCGM reason.
        (ACCELERATED_HARDWARE_READY, "NvidiaNVLinkError", ("Replace", 10), ("Replace", 30)),
        (ACCELERATED_HARDWARE_READY, "DCGMError", ("NoAction", 10), ("Replace", 30)),
        ("KernelReady", "KernelBug", ("Replace", 30), ("Replace", 30)),
    ],
)
def test_each_provisioner_repairs_a_reason_by_its_own_table(condition, reason, node_group, karpenter):
    """#48 item 2: doctor and verify said "replace" for every Karpenter node, where Karpenter
    1.15 with rebootForRepair (which gpu-pool turns on) reboots; its table is its own
    (aws/karpenter-provider-aws v1.15.0 pkg/cloudprovider/cloudprovider.go RepairPolicies)."""
    for rules, (action, wait) in (
        (RepairRules.NODE_GROUP, node_group),
        (RepairRules.KARPENTER, karpenter),
    ):
        policy = RepairPolicy(enabled=True, rules=rules)
        assert (policy.action(condition, reason), policy.wait_minutes(condition, reason)) == (
            RepairAction(action),
            wait,
        ), rules
