"""Training pools' plans (issue 32): what the launch template, NodePool and EC2NodeClass say
about reserved capacity, placement and disruption, without a synth."""

import pytest

from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings

GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/training"
ODCR_ID = "cr-0123456789abcdef0"


@pytest.mark.parametrize(
    ("reservation", "expected"),
    [
        # A group target alone runs On-Demand when the group is full; only
        # capacity-reservations-only keeps the pool reserved (EC2 UG "Launch instances into
        # Capacity Reservations in a group").
        (
            {"type": "odcr", "resource_group_arn": GROUP},
            {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": GROUP},
            },
        ),
        (
            {"type": "odcr", "resource_group_arn": GROUP, "fallback": "on-demand"},
            {"CapacityReservationTarget": {"CapacityReservationResourceGroupArn": GROUP}},
        ),
        # A launch targeting a full reservation fails: the target alone is reserved only.
        (
            {"type": "odcr", "id": ODCR_ID},
            {"CapacityReservationTarget": {"CapacityReservationId": ODCR_ID}},
        ),
    ],
    ids=["group-reserved-only", "group-on-demand-fallback", "id"],
)
def test_the_launch_template_says_what_fallback_says(reservation, expected):
    plan = plan_pool(PoolSettings(capacity_reservation=reservation))
    assert plan.capacity.capacity_reservation_specification() == expected


def _karpenter_disruption(reservation, **karpenter):
    plan = plan_pool(
        PoolSettings(
            provisioner="karpenter",
            instance_types=["p5.48xlarge"],
            zones=["us-east-1a"],
            capacity_reservation=reservation,
            karpenter=karpenter,
        )
    ).karpenter
    assert plan is not None
    node_pool = plan.node_pool()
    return (
        node_pool["spec"]["disruption"]["consolidateAfter"],
        node_pool["spec"]["template"]["spec"]["expireAfter"],
    )


@pytest.mark.parametrize(
    ("reservation", "karpenter", "expected"),
    [
        # One NodePool holds reserved and on-demand nodes: with Never, Karpenter would remove
        # no node at all, an empty on-demand p5 included (NodePool docs, v1.14.1).
        ({"type": "odcr", "id": ODCR_ID, "fallback": "on-demand"}, {}, ("5m", "720h")),
        (
            {"type": "odcr", "id": ODCR_ID, "fallback": "on-demand"},
            {"consolidate_after": "15m", "expire_after": "336h"},
            ("15m", "336h"),
        ),
        # Reserved capacity only: paid for whether a node runs or not, so its nodes stay.
        ({"type": "odcr", "id": ODCR_ID}, {"consolidate_after": "15m"}, ("Never", "Never")),
        ({"type": "capacity-block", "id": ODCR_ID}, {}, ("Never", "Never")),
        (None, {"consolidate_after": "15m"}, ("15m", "720h")),
    ],
    ids=["fallback", "fallback-own-settings", "odcr-only", "capacity-block", "not-reserved"],
)
def test_a_karpenter_pool_that_falls_back_on_demand_removes_its_empty_nodes(
    reservation, karpenter, expected
):
    assert _karpenter_disruption(reservation, **karpenter) == expected


@pytest.mark.parametrize(
    ("reservation", "expected"),
    [
        (None, (True, None)),
        # Placed together already; a placement group can fail launches the block has room for.
        ({"type": "capacity-block", "id": ODCR_ID}, (False, None)),
        # An ODCR serves only launches into the placement group it was created in.
        ({"type": "odcr", "id": ODCR_ID}, (False, None)),
        ({"type": "odcr", "id": ODCR_ID, "placement_group": "p5-training"}, (False, "p5-training")),
    ],
    ids=["on-demand", "capacity-block", "odcr", "odcr-in-a-group"],
)
def test_an_efa_pool_gets_a_placement_group_of_its_own_only_outside_reserved_capacity(
    reservation, expected
):
    capacity = plan_pool(
        PoolSettings(
            instance_types=["p5.48xlarge"],
            zones=["us-east-1a"],
            efa=True,
            capacity_reservation=reservation,
        )
    ).capacity
    assert (capacity.own_placement_group, capacity.reservation_placement_group) == expected


def test_an_odcr_pools_node_class_selects_the_reservations_placement_group():
    """The API server's verdict on it: tests/e2e/test_karpenter_crds.py."""
    plan = plan_pool(
        PoolSettings(
            provisioner="karpenter",
            instance_types=["p5.48xlarge"],
            zones=["us-east-1a"],
            capacity_reservation={"type": "odcr", "id": ODCR_ID, "placement_group": "p5 pg #1"},
        )
    )
    assert plan.karpenter is not None
    node_class = plan.karpenter.ec2_node_class(
        role="gpu-pool-karpenter-node",
        subnet_ids=["subnet-0123456789abcdef0"],
        security_group_ids=["sg-0123456789abcdef0"],
        tags={},
        placement_group=plan.capacity.reservation_placement_group,
    )
    assert node_class["spec"]["placementGroupSelector"] == {"name": "p5 pg #1"}


@pytest.mark.parametrize(
    ("ami_family", "instance_types", "hugepages"),
    [
        # The EFA installer's 5128 pages (EKS UG ml/node-efa).
        ("AL2023", ["p5.48xlarge"], "10256Mi"),
        # Bottlerocket: 110 pages per vCPU (bottlerocket-core-kit corndog): 192 vCPUs.
        ("BOTTLEROCKET", ["p5.48xlarge"], f"{110 * 192 * 2}Mi"),
        ("BOTTLEROCKET", ["p4d.24xlarge"], f"{110 * 96 * 2}Mi"),
        # One template for the group: the fewest vCPUs (g5.8xlarge: 32, g5.16xlarge: 64).
        ("BOTTLEROCKET", [["g5.8xlarge", "g5.16xlarge"]], f"{110 * 32 * 2}Mi"),
    ],
    ids=["al2023", "bottlerocket-p5", "bottlerocket-p4d", "bottlerocket-mixed"],
)
def test_an_efa_groups_zero_node_template_advertises_the_hugepages_its_ami_reserves(
    ami_family, instance_types, hugepages
):
    from tests.support.ca_template import node_template

    (group,) = plan_pool(
        PoolSettings(
            ami_family=ami_family, instance_types=instance_types, zones=["us-east-1a"], efa=True
        )
    ).node_groups
    assert node_template(group.node_template_tags())["allocatable"]["hugepages-2Mi"] == hugepages


@pytest.mark.parametrize(
    ("name", "vcpus"),
    # EC2 DefaultVCpus as Karpenter v1.14.1 publishes them (karpenter.k8s.aws/instance-cpu).
    [
        ("g6f.large", 2),
        ("g5.xlarge", 4),
        ("p5.4xlarge", 16),
        ("p4d.24xlarge", 96),
        ("p6-b200.48xlarge", 192),
        ("g4dn.metal", 96),
        ("g5g.metal", 64),
    ],
)
def test_vcpus_of_a_catalogued_type(name, vcpus):
    from gpu_pool.model.catalog import lookup

    assert lookup(name).vcpus == vcpus
