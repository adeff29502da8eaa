"""Node repair (issue #36): the repair settings' exact messages, each rule of checks/repair.py,
the plan's defaults per provisioner and pool kind, and the node monitoring agent add-on's
configuration against the add-on's own schema at the pinned version
(tests/fixtures/node-monitoring-agent-config-1.7.0, vendored unchanged). The rendered
NodeRepairConfig is checked against CloudFormation's schema in tests/synth/test_repair.py."""

from __future__ import annotations

import json
from typing import get_args

import jsonschema
import pytest

from gpu_pool.model.node_health import (
    ACCELERATED_HARDWARE_READY,
    AGENT_CONDITIONS,
    RepairAction,
    RepairRules,
)
from gpu_pool.model.versions import NODE_MONITORING_AGENT_ADDON_VERSION
from gpu_pool.plan.pool import plan_pool, plan_pools
from gpu_pool.plan.record import PoolRecord, pool_record
from gpu_pool.plan.repair import NODE_MONITORING_AGENT_CONFIGURATION, karpenter_repair_settings
from gpu_pool.plan.summary import pool_summary
from gpu_pool.settings import ConfigError, PoolSettings, load_settings
from gpu_pool.settings.repair import AgentCondition
from tests.support import rules
from tests.support.node_health import REASONS
from tests.support.paths import FIXTURES

AGENT_SCHEMA = json.loads(
    (FIXTURES / "node-monitoring-agent-config-1.7.0" / "configuration.schema.json").read_text()
)
NODEGROUP_SCHEMA = json.loads(
    (FIXTURES / "eks-nodegroup-schema" / "aws-eks-nodegroup.json").read_text()
)
BLOCK = {"type": "capacity-block", "id": "cr-0123456789abcdef0"}
EXISTING = {
    "name": "prod",
    "existing": {
        "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:k",
        "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
        "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
    },
}


def test_the_agent_configuration_passes_the_add_on_schema_of_the_pinned_version():
    assert NODE_MONITORING_AGENT_ADDON_VERSION.startswith("v1.7.0-")
    jsonschema.validate(NODE_MONITORING_AGENT_CONFIGURATION, AGENT_SCHEMA)
    # The schema would catch a key the add-on does not take.
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"dcgm": {"tolerations": []}}, AGENT_SCHEMA)


def test_the_agents_dcgm_host_engine_tolerates_every_taint():
    # Its chart default tolerates none (values.yaml dcgmAgent.tolerations: []), so a tainted
    # GPU node would run no DCGM and report no GPU fault.
    assert NODE_MONITORING_AGENT_CONFIGURATION["dcgmAgent"]["tolerations"] == [
        {"operator": "Exists"}
    ]


def test_the_override_conditions_are_the_agents():
    assert set(get_args(AgentCondition)) == set(AGENT_CONDITIONS)


def test_node_repair_config_is_not_create_only():
    # Adding it to a deployed node group updates the group in place, replacing nothing.
    assert "NodeRepairConfig" in NODEGROUP_SCHEMA["properties"]
    assert "/properties/NodeRepairConfig" not in NODEGROUP_SCHEMA["createOnlyProperties"]


@pytest.mark.parametrize("limit", ["max_unhealthy", "max_parallel"])
def test_a_count_and_a_percentage_of_one_limit_are_refused(limit):
    with pytest.raises(ConfigError) as err:
        PoolSettings(repair={f"{limit}_count": 2, f"{limit}_percentage": 10})
    assert str(err.value) == (
        f"repair.{limit}_percentage: set with {limit}_count; EKS's NodeRepairConfig takes one "
        "of the two, not both: keep one"
    )


def test_defaults_of_a_node_group_pool():
    repair = plan_pool(PoolSettings()).repair
    assert (repair.enabled, repair.reserved) == (True, False)
    # No threshold of gpu-pool's: EKS's own pause (more than 5 nodes and 20%) applies, so a
    # group of one to four nodes is repaired (a percentage alone would stop at its first node).
    assert (repair.max_unhealthy_count, repair.max_unhealthy_percentage) == (None, None)
    assert (repair.max_parallel_count, repair.max_parallel_percentage) == (1, None)
    # EKS's reboot XIDs the agent raises as a condition at v1.7.0, each after 10 minutes.
    assert [(o.condition, o.reason, o.wait_minutes, o.action) for o in repair.overrides] == [
        ("AcceleratedHardwareReady", f"NvidiaXID{xid}Error", 10, RepairAction.REBOOT)
        for xid in (48, 63, 64, 95)
    ]


def test_an_ultraserver_pool_reboots_a_stopped_fabric_manager_only():
    plan = plan_pool(
        PoolSettings(
            instance_types=["p6e-gb200.36xlarge"], zones=["us-east-1a"], capacity_reservation=BLOCK
        )
    )
    reboots = [o.reason for o in plan.repair.overrides if o.action is RepairAction.REBOOT]
    assert reboots[-1] == "FabricManagerNotRunning"
    # The agent's list says NvidiaFabricError "persists across reboots and requires instance
    # replacement": no reason of it that says so is ever rebooted.
    replace_only = [
        name
        for name, entry in REASONS[ACCELERATED_HARDWARE_READY].items()
        if "requires instance replacement" in " ".join(entry["Description"].split())
    ]
    assert replace_only == ["NvidiaFabricError"]
    assert not set(replace_only) & set(reboots)
    assert plan.repair.reserved


def test_set_limits_replace_the_defaults_and_an_empty_override_list_leaves_eks_defaults():
    repair = plan_pool(
        PoolSettings(
            repair={"max_unhealthy_count": 3, "max_parallel_percentage": 50, "overrides": []}
        )
    ).repair
    assert (repair.max_unhealthy_count, repair.max_unhealthy_percentage) == (3, None)
    assert (repair.max_parallel_count, repair.max_parallel_percentage) == (None, 50)
    assert repair.overrides == ()


def test_karpenter_gate_on_while_a_karpenter_pool_repairs():
    on = plan_pool(PoolSettings(provisioner="karpenter"))
    off = plan_pool(PoolSettings(provisioner="karpenter", repair={"enabled": False}))
    nodes = plan_pool(PoolSettings())
    # Karpenter 1.15.0 charts/karpenter/values.yaml: settings.featureGates.nodeRepair,
    # settings.awsFeatureGates.rebootForRepair ("no effect without the nodeRepair feature gate").
    assert karpenter_repair_settings([nodes.repair, on.repair]) == {
        "featureGates": {"nodeRepair": True},
        "awsFeatureGates": {"rebootForRepair": True},
    }
    assert karpenter_repair_settings([nodes.repair, off.repair]) == {}
    assert karpenter_repair_settings([nodes.repair]) == {}


def test_a_reserved_only_karpenter_pool_is_marked_for_terminate_first():
    reserved = PoolSettings(
        provisioner="karpenter", capacity_reservation={"type": "odcr", "id": "cr-0fedcba9876543210"}
    )
    fallback = reserved.model_copy(
        update={
            "capacity_reservation": reserved.capacity_reservation.model_copy(
                update={"fallback": "on-demand"}
            )
        }
    )
    assert plan_pool(reserved).repair.reserved
    assert not plan_pool(fallback).repair.reserved
    # A full reservation has no room for the replacement first: terminateFirstRepair
    # (Karpenter 1.15.0 values.yaml settings.featureGates), for the cluster when one repairs.
    gates = karpenter_repair_settings([plan_pool(fallback).repair, plan_pool(reserved).repair])
    assert gates["featureGates"] == {"nodeRepair": True, "terminateFirstRepair": True}
    assert "terminateFirstRepair" not in karpenter_repair_settings(
        [plan_pool(fallback).repair]
    )["featureGates"]
    # A reserved pool that does not repair asks for nothing.
    reserved_off = PoolSettings(
        provisioner="karpenter",
        capacity_reservation={"type": "odcr", "id": "cr-0fedcba9876543210"},
        repair={"enabled": False},
    )
    gates = karpenter_repair_settings([plan_pool(fallback).repair, plan_pool(reserved_off).repair])
    assert gates["featureGates"] == {"nodeRepair": True}


def test_auto_mode_repairs_always():
    repair = plan_pool(PoolSettings(provisioner="auto-mode")).repair
    assert repair.enabled
    assert repair.describe() == "on (EKS Auto Mode: always, not configurable)"


def test_the_record_carries_repair_and_plan_shows_it():
    record = pool_record(plan_pool(PoolSettings()), "c", "us-east-1")
    read = PoolRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert read.repair == record.repair
    assert pool_summary(read).repair == (
        "on; pauses as EKS does (more than 5 nodes and 20% unhealthy); 1 node at a time; "
    "reboots on XID 48, XID 63, XID 64, XID 95"
    )
    older = {k: v for k, v in record.to_json().items() if k != "repair"}
    assert pool_summary(PoolRecord.from_json(older)).repair is None


CASES = {
    "defaults-are-valid": ({}, []),
    "auto-mode-turned-off": (
        {"pool": {"provisioner": "auto-mode", "repair": {"enabled": False}}},
        [
            (
                "E",
                'pool.repair.enabled: EKS Auto Mode always repairs its nodes, and its repair cannot be configured (EKS user guide, "Automatically repair nodes in EKS clusters"): remove repair',
            )
        ],
    ),
    "auto-mode-on-is-what-it-does": (
        {"pool": {"provisioner": "auto-mode", "repair": {"enabled": True}}},
        [],
    ),
    "karpenter-limit": (
        {"pool": {"provisioner": "karpenter", "repair": {"max_parallel_count": 2}}},
        [
            (
                "E",
                "pool.repair.max_parallel_count: Karpenter's node repair has no such setting (its waits and its 20% threshold are its own; gpu-pool turns it on or off): remove it, or use provisioner cluster-autoscaler, whose node groups take it",
            )
        ],
    ),
    "karpenter-pools-disagree": (
        {
            "pools": {
                "a": {"provisioner": "karpenter", "labels": {"w": "a"}},
                "b": {
                    "provisioner": "karpenter",
                    "labels": {"w": "b"},
                    "repair": {"enabled": False},
                },
            }
        },
        [
            (
                "E",
                "pools.b.repair.enabled: false, but Karpenter pool 'a' has true; Karpenter's nodeRepair feature gate is one per cluster, for every NodePool: give the cluster's Karpenter pools the same value",
            )
        ],
    ),
    "existing-cluster-without-the-agent": (
        {"cluster": EXISTING},
        [
            (
                "W",
                'cluster.existing.node_monitoring_agent: unset, and pool(s) gpu repair their nodes, which works only where the EKS node monitoring agent reports their health: set true to create its add-on, or false where the cluster has it (or once you install it: aws eks create-addon --cluster-name prod --addon-name eks-node-monitoring-agent --addon-version v1.7.0-eksbuild.1 --configuration-values \'{"dcgmAgent":{"tolerations":[{"operator":"Exists"}]}}\')',
            )
        ],
    ),
    "existing-cluster-with-the-agent": (
        {
            "cluster": {
                **EXISTING,
                "existing": {**EXISTING["existing"], "node_monitoring_agent": True},
            }
        },
        [],
    ),
    "existing-cluster-that-has-the-agent": (
        {
            "cluster": {
                **EXISTING,
                "existing": {**EXISTING["existing"], "node_monitoring_agent": False},
            }
        },
        [],
    ),
    "existing-cluster-not-repairing": (
        {"cluster": EXISTING, "pool": {"repair": {"enabled": False}}},
        [],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_rule(case):
    settings, expected = CASES[case]
    found = [f for f in rules.findings(settings) if "repair" in f[1] or "monitoring" in f[1]]
    assert found == expected


def test_the_karpenter_limit_rule_names_each_setting():
    settings = {
        "pool": {
            "provisioner": "karpenter",
            "repair": {"max_unhealthy_percentage": 30, "overrides": []},
        }
    }
    assert rules.rule_ids(settings).count("GP-REPAIR-02") == 2
    assert plan_pools(load_settings(settings, None))[0].repair.overrides == ()


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        (
            PoolSettings(repair={"enabled": False}),
            "off",
        ),
        (
            PoolSettings(provisioner="karpenter"),
            "on (Karpenter's nodeRepair: reboots on XID 46, XID 48, XID 54, XID 62, XID 63, "
            "XID 95, XID 109, XID 110, XID 136, XID 140, XID 143, XID 155, XID 156, XID 158; "
            "replaces on other faults; stops above 20% unhealthy)",
        ),
        (
            PoolSettings(
                repair={"max_unhealthy_count": 3, "max_parallel_count": 2, "overrides": []}
            ),
            "on; stops above 3 nodes unhealthy; 2 nodes at a time",
        ),
        (
            PoolSettings(
                repair={
                    "max_parallel_percentage": 25,
                    "overrides": [
                        {"reason": "NvidiaNVLinkError", "wait_minutes": 5, "action": "Reboot"},
                        {"reason": "NvidiaXID79Error", "wait_minutes": 5, "action": "Replace"},
                    ],
                }
            ),
            "on; pauses as EKS does (more than 5 nodes and 20% unhealthy); 25% at a time; reboots "
            "on NvidiaNVLinkError; replaces on XID 79",
        ),
    ],
    ids=["off", "karpenter", "counts", "percentage-and-own-overrides"],
)
def test_plan_describes_repair_in_one_line(settings, line):
    assert plan_pool(settings).repair.describe() == line


def test_the_policy_doctor_reads():
    nodes = plan_pool(PoolSettings()).repair.policy()
    assert (nodes.enabled, nodes.rules) == (True, RepairRules.NODE_GROUP)
    assert nodes.action("AcceleratedHardwareReady", "NvidiaXID64Error") is RepairAction.REBOOT
    karpenter = plan_pool(PoolSettings(provisioner="karpenter")).repair.policy()
    # Karpenter 1.15 with rebootForRepair (#48 item 2): its own table, which replaces XID 64
    # where EKS reboots it, and reboots XID 48 as EKS does.
    assert karpenter.rules is RepairRules.KARPENTER
    assert karpenter.action("AcceleratedHardwareReady", "NvidiaXID64Error") is RepairAction.REPLACE
    assert karpenter.action("AcceleratedHardwareReady", "NvidiaXID48Error") is RepairAction.REBOOT
    auto = plan_pool(PoolSettings(provisioner="auto-mode", instance_types=["g6.xlarge"]))
    assert auto.repair.policy().rules is RepairRules.AUTO_MODE


def test_an_overrides_wait_is_the_one_doctor_ages_a_condition_against():
    settings = PoolSettings(
        repair={"overrides": [{"reason": "NvidiaXID79Error", "wait_minutes": 3, "action": "Replace"}]}
    )
    policy = plan_pool(settings).repair.policy()
    assert policy.wait_minutes("AcceleratedHardwareReady", "NvidiaXID79Error") == 3
