"""Features composed, not alone (#48 item 10): each test here is a class of bug that passed the
whole suite when injected into the last change, because each feature was tested on its own
(the first pool only, one provisioner, one key, one order). The plan and checks layers, no
synth; tests/synth/test_composed_pools.py has what only the template shows, and
tests/unit/test_pool_mixes.py the properties over generated mixes."""

from __future__ import annotations

from datetime import date

import pytest

from gpu_pool.cdk.network.local_zones import subnet_slots
from gpu_pool.checks import check_settings
from gpu_pool.plan.pool import plan_pools
from gpu_pool.plan.repair import karpenter_repair_settings, needs_node_monitoring_agent
from gpu_pool.settings import load_settings

TODAY = date(2026, 12, 2)
NODE_GROUP = {"instance_types": ["g5.xlarge"]}
KARPENTER = {
    "provisioner": "karpenter",
    "instance_types": ["g6.xlarge"],
    "labels": {"workload": "batch"},
}
AUTO_MODE = {
    "provisioner": "auto-mode",
    "instance_types": ["g6e.xlarge"],
    "labels": {"workload": "auto"},
}
# Two Local Zones of one /20 slot (CRC-32 of the name mod 16 is 5 for both).
DALLAS, MINNEAPOLIS = "us-east-1-dfw-2a", "us-east-1-msp-1a"


def _plans(pools: dict) -> list:
    return plan_pools(load_settings({"pools": pools}, None))


def _rules(pools: dict) -> list[str]:
    settings = load_settings({"pools": pools}, None)
    return [f.rule for f in check_settings(settings, plan_pools(settings), today=TODAY).all()]


@pytest.mark.parametrize(
    ("pools", "gates"),
    [
        # A node group and an Auto Mode pool repair; the Karpenter pool does not: no gate.
        (
            {
                "ng": NODE_GROUP,
                "auto": AUTO_MODE,
                "k": {**KARPENTER, "repair": {"enabled": False}},
            },
            {},
        ),
        # The Karpenter pool repairs, the node group does not: the gates, whatever comes first.
        (
            {
                "ng": {**NODE_GROUP, "repair": {"enabled": False}},
                "auto": AUTO_MODE,
                "k": KARPENTER,
            },
            {"nodeRepair": True},
        ),
    ],
    ids=["karpenter-off", "karpenter-on"],
)
def test_karpenters_repair_gates_follow_its_own_pools_only(pools, gates):
    for order in (pools, dict(reversed(list(pools.items())))):
        settings = karpenter_repair_settings(p.repair for p in _plans(order))
        assert settings.get("featureGates", {}) == gates, list(order)


def test_karpenter_pools_agree_on_repair_whatever_the_other_provisioners_say():
    """GP-REPAIR-03 compares Karpenter pools with each other, never with a node group's or
    Auto Mode's repair, in either order."""
    pools = {
        "ng": {**NODE_GROUP, "repair": {"enabled": False}},
        "auto": AUTO_MODE,
        "k": KARPENTER,
    }
    for order in (pools, dict(reversed(list(pools.items())))):
        assert "GP-REPAIR-03" not in _rules(order), list(order)


@pytest.mark.parametrize(
    ("provisioners", "agent"),
    [
        (["auto-mode"], False),
        (["auto-mode", "cluster-autoscaler"], True),
        (["cluster-autoscaler", "auto-mode"], True),
        (["auto-mode", "karpenter"], True),
        (["auto-mode", "auto-mode", "karpenter"], True),
        (["karpenter", "cluster-autoscaler"], True),
    ],
)
def test_the_node_monitoring_agent_is_added_when_any_pool_is_not_auto_modes(provisioners, agent):
    """The add-on goes with a node group or Karpenter pool anywhere among the pools: Auto Mode's
    nodes run their own agent, the others none without it."""
    assert needs_node_monitoring_agent(provisioners) is agent


def test_two_local_zones_of_one_slot_get_the_same_subnets_in_either_order():
    """The earlier name keeps its own slot, the later takes the next free one, whichever pool
    names its zone first (a subnet's CidrBlock is create-only: an order-dependent slot would
    replace a deployed subnet and its node groups when the pools are reordered)."""
    assert subnet_slots([DALLAS]) == {DALLAS: 5}
    assert subnet_slots([MINNEAPOLIS]) == {MINNEAPOLIS: 5}
    for zones in ([DALLAS, MINNEAPOLIS], [MINNEAPOLIS, DALLAS]):
        assert subnet_slots(zones) == {DALLAS: 5, MINNEAPOLIS: 6}, zones


@pytest.mark.parametrize(
    "types",
    [["g5.2xlarge", "g5.xlarge"], ["g5.xlarge", "g5.2xlarge"]],
    ids=["larger-first", "smaller-first"],
)
def test_a_raid0_group_of_unequal_instance_stores_tells_ca_the_smallest(types):
    """g5.xlarge has 250 GB of NVMe, g5.2xlarge 450: Cluster Autoscaler's template for the group
    must promise only what every node has, whatever the entry's order."""
    (plan,) = _plans({"gpu": {"instance_types": [types], "instance_store": "raid0"}})
    (group,) = plan.node_groups
    tags = group.node_template_tags()
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"] == "250G"
