"""The VPC's zones are the cluster's own: pools choose among them and never change them.

These stacks are synthesized with the availability-zones lookup cached (tests/support/looked_up.py).
"""

from __future__ import annotations

import pytest

from gpu_pool.cli.replacements import dependency_changes
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
