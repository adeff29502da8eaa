"""Features composed, as synthesized (#48 item 10): one cluster that mixes provisioners, puts
two node-group pools in two Local Zones of one /20 slot and gives them two customer keys, with
the Auto Mode pool first, synthesized in both orders of the node-group pools. What only the
template shows: the agent add-on, a grant per key that each pool's node groups wait for, and
the Local Zone subnets (their slots, their wait for the VPC's secondary CIDR block, never the
cluster's)."""

from __future__ import annotations

from functools import cache

import pytest

from gpu_pool.cdk.nodes.volume_key import RESOURCE_TYPE
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import AppSettings
from tests.support.cfn import unvalidated_app
from tests.support.looked_up import ACCOUNT, REGION, ZONES
from tests.support.settings import KMS_KEY

pytestmark = pytest.mark.synth

OTHER_KEY = "arn:aws:kms:us-east-1:123456789012:key/abcd1234-ab12-cd34-ef56-abcdef123456"
# Two Local Zones of one slot (CRC-32 of the name mod 16 is 5 for both): the earlier name keeps
# it, the later takes the next (cdk/network/local_zones.py).
DALLAS, MINNEAPOLIS = "us-east-1-dfw-2a", "us-east-1-msp-1a"
CIDRS = {DALLAS: "10.1.80.0/20", MINNEAPOLIS: "10.1.96.0/20"}
AUTO = {"provisioner": "auto-mode", "instance_types": ["g6e.xlarge"], "labels": {"w": "auto"}}
EDGE = {
    "a": {
        "instance_types": ["g5.xlarge"],
        "zones": [MINNEAPOLIS],
        "volume_kms_key_arn": KMS_KEY,
        "labels": {"w": "a"},
    },
    "b": {
        "instance_types": ["g6.xlarge"],
        "zones": [DALLAS],
        "volume_kms_key_arn": OTHER_KEY,
        "labels": {"w": "b"},
    },
}


@cache
def _template(order: tuple[str, ...]) -> dict:
    pools = {"auto": AUTO, **{name: EDGE[name] for name in order}}
    settings = AppSettings.model_validate({"account": ACCOUNT, "region": REGION, "pools": pools})
    lookup = {
        f"availability-zones:account={ACCOUNT}:region={REGION}": [DALLAS, MINNEAPOLIS, *ZONES]
    }
    app = unvalidated_app(context=lookup)
    stack = GpuPoolStack(app, "GpuPool", settings=settings)
    template: dict = app.synth().get_stack_by_name(stack.stack_name).template
    return template


ORDERS = [("a", "b"), ("b", "a")]


def _of_type(template: dict, type_name: str) -> dict:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_name}


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_the_agent_is_added_beside_an_auto_mode_pool_that_comes_first(order):
    addons = [
        r["Properties"]["AddonName"] for r in _of_type(_template(order), "AWS::EKS::Addon").values()
    ]
    assert addons.count("eks-node-monitoring-agent") == 1


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_each_key_has_its_grant_and_each_pools_node_groups_wait_for_their_keys(order):
    template = _template(order)
    grants = {r["Properties"]["KeyArn"]: k for k, r in _of_type(template, RESOURCE_TYPE).items()}
    assert sorted(grants) == sorted([KMS_KEY, OTHER_KEY])
    groups = _of_type(template, "AWS::EKS::Nodegroup")
    for name, key in (("a", KMS_KEY), ("b", OTHER_KEY)):
        own = [
            r for r in groups.values() if r["Properties"]["Labels"].get("gpu-pool.io/pool") == name
        ]
        assert own and all(grants[key] in r["DependsOn"] for r in own), name


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_local_zone_subnets_keep_their_slots_wait_for_the_block_and_stay_the_pools(order):
    template = _template(order)
    (block,) = _of_type(template, "AWS::EC2::VPCCidrBlock")
    subnets = _of_type(template, "AWS::EC2::Subnet")
    local = {
        r["Properties"]["AvailabilityZone"]: (k, r)
        for k, r in subnets.items()
        if r["Properties"]["AvailabilityZone"] in CIDRS
    }
    assert {zone: r["Properties"]["CidrBlock"] for zone, (_, r) in local.items()} == CIDRS
    # A subnet of the secondary block cannot be created before the block is associated.
    assert all(block in r.get("DependsOn", []) for _, r in local.values())
    (cluster,) = _of_type(template, "AWS::EKS::Cluster").values()
    given = cluster["Properties"]["ResourcesVpcConfig"]["SubnetIds"]
    assert [s for s in given if s.get("Ref") in {k for k, _ in local.values()}] == []
