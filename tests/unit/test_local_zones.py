"""Local Zones: where their names are accepted (a pool's zones, a reservation's, an imported
VPC's subnets), never the cluster's, and the opt-in the zone lookup tells (no synth).

EC2 names a Local Zone by its Region, location and zone (us-west-2-lax-1a) and its group by the
name without the zone letter (us-west-2-lax-1): EC2 API Reference, "AvailabilityZone"
(GroupName). The CDK CLI's availability-zones lookup lists the Local Zones an account has opted
in to (DescribeAvailabilityZones without a filter). EKS refuses Local Zone subnets at cluster
creation (EKS UG "Launch low-latency EKS clusters with AWS Local Zones").
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from gpu_pool.cdk.network.placement import subnets_by_zone
from gpu_pool.checks import check_settings
from gpu_pool.model.aws_names import is_local_zone, is_zone, zone_group, zone_region
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.cluster import cluster_zones, local_zones, placeholder_zones
from gpu_pool.plan.pool import plan_pools
from gpu_pool.plan.region import RegionFacts
from gpu_pool.settings import ConfigError, load_settings
from tests.support.rules import documented

BOUND = {"account": "123456789012", "region": "us-east-1"}
DALLAS = "us-east-1-dfw-2a"
# The lookup of an account opted in to two Local Zones (listed first: no order is documented).
LOOKUP = [DALLAS, "us-east-1-bos-1a"] + [f"us-east-1{letter}" for letter in "abcdef"]
BLOCK = {"type": "capacity-block", "id": "cr-0123456789abcdef0"}
ULTRASERVER = {
    "instance_types": ["p6e-gb200.36xlarge"],
    "zones": [DALLAS],
    "gpu_software": "dra-driver",
    "labels": {"workload": "training"},
    "max_size": 18,
    "capacity_reservation": BLOCK,
    "efa": True,
}


def _errors(settings, known=(), reservations=None):
    loaded = load_settings(settings, None)
    found = check_settings(
        loaded, plan_pools(loaded), known_zones=known, reservations=reservations
    ).all()
    return [str(f) for f in documented(found) if f.error]


@pytest.mark.parametrize(
    ("name", "local", "region"),
    [
        ("us-east-1a", False, "us-east-1"),
        (DALLAS, True, "us-east-1"),
        ("us-west-2-lax-1b", True, "us-west-2"),
        ("us-gov-west-1a", False, "us-gov-west-1"),
        ("us-east-1-wl1-bos-wlz-1", None, None),  # a Wavelength Zone: neither
        ("us-east-1", None, None),
    ],
)
def test_zone_names_and_their_region(name, local, region):
    assert is_zone(name) is (local is not None)
    assert is_local_zone(name) is bool(local)
    assert zone_region(name) == region


def test_a_local_zones_group_is_its_name_without_the_zone_letter():
    assert zone_group("us-west-2-lax-1a") == "us-west-2-lax-1"


def test_the_cluster_takes_the_first_three_availability_zones_of_the_lookup():
    settings = load_settings({**BOUND, "pools": {"gb200": ULTRASERVER}}, None)
    assert cluster_zones(settings, LOOKUP) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert cluster_zones(settings, [DALLAS]) is None
    assert local_zones(settings) == [DALLAS]
    # Before the lookup the VPC holds the pools' Availability Zones only.
    assert placeholder_zones(settings) == []


def test_an_ultraserver_pool_in_an_opted_in_local_zone_passes():
    block = ReservationFacts("cr-0123456789abcdef0", DALLAS, "p6e-gb200.36xlarge", 18)
    settings = {
        **BOUND,
        "acknowledge": {"GP-DRA-11": "sized through the EKS API"},
        "pools": {"gb200": ULTRASERVER},
    }
    assert _errors(settings, LOOKUP, {"gb200": block}) == []


def test_a_local_zone_missing_from_the_lookup_names_the_opt_in():
    settings = {**BOUND, "pools": {"gb200": ULTRASERVER}}
    azs = LOOKUP[2:]
    assert _errors(settings, azs) == [
        "pools.gb200.zones: 'us-east-1-dfw-2a' is not among the zones this account has in "
        "us-east-1 (us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f, "
        "from cdk.context.json): the lookup lists a Local Zone once the account has opted in "
        "to its group; check it with `aws ec2 describe-availability-zones "
        "--all-availability-zones --filters Name=zone-name,Values=us-east-1-dfw-2a`, opt in "
        "with `aws ec2 modify-availability-zone-group --group-name us-east-1-dfw-2 "
        "--opt-in-status opted-in`, then `cdk context --reset "
        "availability-zones:account=123456789012:region=us-east-1` to look again"
    ]


def test_a_local_zone_is_never_the_clusters():
    settings = {**BOUND, "cluster": {"zones": ["us-east-1a", "us-east-1b", DALLAS]}}
    expected = [
        "cluster.zones: 'us-east-1-dfw-2a' is a Local Zone: EKS refuses Local Zone subnets at "
        'cluster creation (EKS user guide, "Launch low-latency EKS clusters with AWS Local '
        "Zones\"); list only Availability Zones here and name the Local Zone in the pool's "
        "zones, which get node-only subnets there"
    ]
    assert _errors(settings, LOOKUP) == expected
    assert _errors(settings, LOOKUP[2:]) == expected


def test_an_imported_vpc_may_give_local_zone_subnets_to_pools():
    existing = {
        "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:f",
        "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/kubectl",
        "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaa"], DALLAS: ["subnet-0ddddddd"]},
    }
    pool = {**ULTRASERVER, "efa": False}  # EFA needs the VPC of a cluster the app creates
    settings = {**BOUND, "cluster": {"existing": existing}, "pools": {"gb200": pool}}
    assert _errors(settings) == []
    elsewhere = {**existing, "subnets_by_zone": {"us-west-2-lax-1a": ["subnet-0ddddddd"]}}
    assert _errors({**BOUND, "cluster": {"existing": elsewhere}}) == [
        "cluster.existing.subnets_by_zone: 'us-west-2-lax-1a' is not in region us-east-1, "
        "where the stack and the cluster are: use that region's subnets"
    ]


def test_an_imported_vpcs_local_zone_is_no_zone_of_a_pool_without_zones():
    """A pool naming no zone never uses a Local Zone's subnet, so a type offered only there is
    offered in none of the zones its node groups use (GP-REGION-03)."""
    existing = {
        "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:f",
        "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/kubectl",
        "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaa"], DALLAS: ["subnet-0ddddddd"]},
    }
    loaded = load_settings(
        {
            **BOUND,
            "cluster": {"existing": existing},
            "pools": {"i": {"instance_types": ["g6.xlarge"]}},
        },
        None,
    )
    facts = RegionFacts("us-east-1", offerings={"g6.xlarge": (DALLAS,)})
    found = check_settings(loaded, plan_pools(loaded), region_facts=facts).all()
    assert [f.rule for f in documented(found) if f.error] == ["GP-REGION-03"]
    assert "none of the cluster's zones (us-east-1a)" in str(found[0])


def test_a_pool_without_zones_stays_out_of_local_zones():
    stack = cdk.Stack()
    subnets = [
        ec2.Subnet.from_subnet_attributes(stack, s, subnet_id=s, availability_zone=zone)
        for s, zone in (("subnet-0aaaaaaa", "us-east-1a"), ("subnet-0ddddddd", DALLAS))
    ]
    assert subnets_by_zone("pools.i", [], subnets) == {None: subnets[:1]}
    assert subnets_by_zone("pools.i", [DALLAS], subnets) == {DALLAS: subnets[1:]}
    with pytest.raises(ConfigError) as refused:
        subnets_by_zone("pools.i", [], subnets[1:])
    assert str(refused.value) == (
        "pools.i.zones: empty, and every subnet is in a Local Zone; a pool goes to a Local Zone "
        "only when it names it: list it in zones"
    )


def test_a_local_zones_subnet_block_follows_from_its_name_alone():
    """Review of #38: the /20 came from the zone's place in sorted order, so adding a pool in a
    Local Zone that sorts first moved (replaced: CidrBlock is create-only) a deployed zone's
    subnet, and with it its node groups. Now it is the zone's own, whatever else is named."""
    from gpu_pool.cdk.network.local_zones import subnet_slots

    dallas = subnet_slots(["us-east-1-dfw-2a"])["us-east-1-dfw-2a"]
    for others in (["us-east-1-atl-2a"], ["us-east-1-atl-2a", "us-east-1-bos-1a", "us-east-1-mia-2a"]):
        slots = subnet_slots(["us-east-1-dfw-2a", *others])
        assert slots["us-east-1-dfw-2a"] == dallas
        assert len(set(slots.values())) == len(slots)
    # Two zones of one slot: the second in name order takes the next free one.
    names = [f"us-east-1-x{n}-1a" for n in range(40)]
    slots = subnet_slots(names[:16])
    assert sorted(slots.values()) == list(range(16))
