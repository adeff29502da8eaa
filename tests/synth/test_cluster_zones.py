"""The VPC's zones are the cluster's own: pools choose among them and never change them.

These stacks are synthesized with the availability-zones lookup cached (tests/support/looked_up.py).
"""

from __future__ import annotations

import pytest

from gpu_pool.cli.commands.replacements.changes import dependency_changes
from tests.support.docs_examples import app_settings, settings_example
from tests.support.looked_up import ACCOUNT, REGION, synth_looked_up

pytestmark = pytest.mark.synth

NETWORK = (
    "AWS::EC2::VPC",
    "AWS::EC2::Subnet",
    "AWS::EC2::NatGateway",
    "AWS::EC2::EIP",
    "AWS::EC2::RouteTable",
    "AWS::EC2::Route",
    "AWS::EC2::SubnetRouteTableAssociation",
    "AWS::EKS::Cluster",
)
INFERENCE = {"instance_types": ["g6.xlarge"]}
# The training pool docs/training.md shows: one zone, EFA, a placement group.
EFA_POOL = {
    "instance_types": ["p5.48xlarge"],
    "zones": ["us-east-1a"],
    "efa": True,
    "labels": {"workload": "training"},
    "max_size": 2,
}


def _of_types(template: dict, types: tuple[str, ...]) -> dict:
    return {k: r for k, r in template["Resources"].items() if r["Type"] in types}


def _subnet_zones(template: dict) -> list[str]:
    subnets = _of_types(template, ("AWS::EC2::Subnet",)).values()
    return sorted({s["Properties"]["AvailabilityZone"] for s in subnets})


def _cluster_subnets(template: dict) -> list:
    (cluster,) = _of_types(template, ("AWS::EKS::Cluster",)).values()
    return cluster["Properties"]["ResourcesVpcConfig"]["SubnetIds"]


def _training_example(tmp_path) -> dict:
    example = settings_example("docs/training.md", "Example: a reserved p5 pool with EFA")
    return app_settings(example, tmp_path)


def test_the_training_example_gets_a_cluster_in_three_zones(tmp_path):
    example = _training_example(tmp_path)
    assert (example["account"], example["region"]) == (ACCOUNT, REGION)
    template = synth_looked_up(example)
    # EKS needs the cluster's subnets in two zones or more: the one-zone pools do not shrink it.
    assert _subnet_zones(template) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert len(_cluster_subnets(template)) == 3
    subnets = _of_types(template, ("AWS::EC2::Subnet",))
    in_a = [
        {"Ref": k}
        for k, s in subnets.items()
        if s["Properties"]["AvailabilityZone"] == "us-east-1a"
        and k in {ref["Ref"] for ref in _cluster_subnets(template)}
    ]
    groups = _of_types(template, ("AWS::EKS::Nodegroup",))
    train = [g for k, g in groups.items() if k.startswith("GpuPoolTrain")]
    assert len(train) == 2
    # Both training pools' groups use the private subnet of the block's zone only.
    assert all(g["Properties"]["Subnets"] == in_a for g in train)


def test_adding_a_one_zone_efa_pool_touches_no_network_or_cluster_resource():
    before = synth_looked_up(
        {"account": ACCOUNT, "region": REGION, "pools": {"inference": INFERENCE}}
    )
    after = synth_looked_up(
        {
            "account": ACCOUNT,
            "region": REGION,
            "pools": {"inference": INFERENCE, "train": EFA_POOL},
        }
    )
    assert _of_types(after, NETWORK) == _of_types(before, NETWORK)
    # The system and inference node groups (and their launch templates) stay as they were.
    kept = ("AWS::EKS::Nodegroup", "AWS::EC2::LaunchTemplate")
    old = _of_types(before, kept)
    assert {k: r for k, r in _of_types(after, kept).items() if k in old} == old
    assert dependency_changes(before, after) == []


def test_named_cluster_zones_are_the_vpcs_whatever_the_pools_name():
    settings = {
        "account": ACCOUNT,
        "region": REGION,
        "cluster": {"zones": ["us-east-1b", "us-east-1d"]},
        "pools": {"train": {**EFA_POOL, "zones": ["us-east-1d"]}},
    }
    template = synth_looked_up(settings)
    assert _subnet_zones(template) == ["us-east-1b", "us-east-1d"]
    assert len(_cluster_subnets(template)) == 2


ULTRASERVER = ("docs/dra-and-ultraservers.md", "Example: a GB200 UltraServer on a Capacity Block")
DALLAS = "us-east-1-dfw-2a"


def _refs(template: dict, zones: set[str]) -> list[dict]:
    subnets = _of_types(template, ("AWS::EC2::Subnet",))
    return [{"Ref": k} for k, s in subnets.items() if s["Properties"]["AvailabilityZone"] in zones]


def test_a_lookup_with_local_zones_gives_the_cluster_availability_zones_only():
    """The cached lookup lists the opted-in Local Zones first (tests/support/looked_up.py); EKS
    refuses Local Zone subnets at cluster creation (EKS UG "Launch low-latency EKS clusters with
    AWS Local Zones"), so the cluster's are in the first three Availability Zones."""
    template = synth_looked_up({"account": ACCOUNT, "region": REGION, "pools": {"i": INFERENCE}})
    assert _subnet_zones(template) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    resources = template["Resources"]
    zones = [
        resources[s["Ref"]]["Properties"]["AvailabilityZone"] for s in _cluster_subnets(template)
    ]
    assert sorted(zones) == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_the_ultraserver_pool_gets_a_node_only_subnet_in_its_local_zone(tmp_path):
    """docs/dra-and-ultraservers.md's UltraServer pool on a block in the Dallas Local Zone: its
    node group is in that zone's subnet only, which the cluster and its system nodes never get,
    and which reaches the internet through the NAT gateway of an Availability Zone."""
    example = app_settings(settings_example(*ULTRASERVER), tmp_path)
    template = synth_looked_up(example)
    (dallas,) = _refs(template, {DALLAS})
    groups = _of_types(template, ("AWS::EKS::Nodegroup",))
    (pool,) = [g for k, g in groups.items() if k.startswith("GpuPoolGb200")]
    assert pool["Properties"]["Subnets"] == [dallas]
    (system,) = [g for k, g in groups.items() if "SystemNodes" in k]
    assert dallas not in system["Properties"]["Subnets"]
    assert dallas not in _cluster_subnets(template)
    assert _subnet_zones(template) == [DALLAS, "us-east-1a", "us-east-1b", "us-east-1c"]
    resources = template["Resources"]
    subnet = resources[dallas["Ref"]]["Properties"]
    (block,) = _of_types(template, ("AWS::EC2::VPCCidrBlock",)).values()
    # Dallas's own /20 of the block, from its name alone (CRC-32 mod 16 = 5): another Local
    # Zone pool added later never moves it (a subnet's CidrBlock is create-only).
    assert subnet["CidrBlock"] == "10.1.80.0/20"
    assert block["Properties"]["CidrBlock"] == "10.1.0.0/16"
    (association,) = [
        r["Properties"]
        for r in _of_types(template, ("AWS::EC2::SubnetRouteTableAssociation",)).values()
        if r["Properties"]["SubnetId"] == dallas
    ]
    (route,) = [
        r["Properties"]
        for r in _of_types(template, ("AWS::EC2::Route",)).values()
        if r["Properties"]["RouteTableId"] == association["RouteTableId"]
    ]
    (nat,) = _of_types(template, ("AWS::EC2::NatGateway",))
    assert route == {
        "RouteTableId": association["RouteTableId"],
        "DestinationCidrBlock": "0.0.0.0/0",
        "NatGatewayId": {"Ref": nat},
    }
    nat_subnet = resources[nat]["Properties"]["SubnetId"]["Ref"]
    assert resources[nat_subnet]["Properties"]["AvailabilityZone"] == "us-east-1a"


def test_adding_a_local_zone_pool_changes_no_existing_network_or_cluster_resource():
    """The Local Zone's subnet takes a CIDR block of its own: the VPC's subnets (whose
    default layout may fill the primary block), the NAT gateway and the cluster stay."""
    before = synth_looked_up({"account": ACCOUNT, "region": REGION, "pools": {"i": INFERENCE}})
    local = {**INFERENCE, "zones": [DALLAS]}
    after = synth_looked_up(
        {"account": ACCOUNT, "region": REGION, "pools": {"i": INFERENCE, "edge": local}}
    )
    old = _of_types(before, NETWORK)
    assert {k: r for k, r in _of_types(after, NETWORK).items() if k in old} == old
    assert dependency_changes(before, after) == []
