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
