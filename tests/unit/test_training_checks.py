"""Guardrails of training pools written with the issue-32 fixes: one case per rule, each with
the exact message users read (the older training cases are in test_checks.py)."""

import pytest

from gpu_pool.settings import ConfigError, PoolSettings
from tests.support import rules

GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/training"


ODCR_ID = "cr-0123456789abcdef0"
HUGEPAGES_WARNING = (
    "W",
    "pool.efa: true with provisioner: karpenter, which counts only an instance type's own "
    "capacity, and hugepages are not part of it (they enter only through a NodeOverlay, alpha "
    "and off by default in Karpenter 1.15.0): a pod requesting hugepages-2Mi never gets a node; "
    "let EFA pods request none and set FI_EFA_USE_HUGE_PAGE=0 in them, or use provisioner: "
    "cluster-autoscaler",
)


def pool(**settings):
    return {"pool": settings}


def karpenter_efa(**settings):
    return pool(
        provisioner="karpenter",
        instance_types=["p5.48xlarge"],
        zones=["us-east-1a"],
        efa=True,
        **settings,
    )


CASES = {
    # EC2 runs a launch that targets a group On-Demand when the group is full (EC2 UG "Launch
    # instances into Capacity Reservations in a group"): that is the fallback, nothing to refuse.
    "odcr-group-falls-back-on-demand-by-itself": (
        pool(
            capacity_reservation={
                "type": "odcr",
                "resource_group_arn": GROUP,
                "fallback": "on-demand",
            }
        ),
        [],
    ),
    "odcr-placement-group-over-several-zones": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            **pool(
                instance_types=["p5.48xlarge"],
                zones=["us-east-1a", "us-east-1b"],
                capacity_reservation={"type": "odcr", "id": ODCR_ID, "placement_group": "pg"},
            ),
        },
        [
            (
                "E",
                "pool.zones: 2 zones (us-east-1a, us-east-1b) with pool.capacity_reservation.placement_group: a cluster placement group lives in one zone and launches into it elsewhere fail: list exactly the group's zone",
            )
        ],
    ),
    "odcr-placement-group-in-its-zone": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            **pool(
                instance_types=["p5.48xlarge"],
                zones=["us-east-1a"],
                capacity_reservation={"type": "odcr", "id": ODCR_ID, "placement_group": "pg"},
            ),
        },
        [],
    ),
    # The Capacity Block pool's placement group is gone, and with it the need for
    # placementGroupSelector; a reservation's own placement group still needs it.
    "karpenter-efa-capacity-block-on-1.10": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "karpenter": {"chart_version": "1.10.0"},
            "cluster": {"kubernetes_version": "1.34"},
            **karpenter_efa(capacity_reservation={"type": "capacity-block", "id": ODCR_ID}),
        },
        [HUGEPAGES_WARNING],
    ),
    "karpenter-odcr-placement-group-on-1.10": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "karpenter": {"chart_version": "1.10.0"},
            "cluster": {"kubernetes_version": "1.34"},
            **pool(
                provisioner="karpenter",
                instance_types=["p5.48xlarge"],
                zones=["us-east-1a"],
                capacity_reservation={"type": "odcr", "id": ODCR_ID, "placement_group": "pg"},
            ),
        },
        [
            (
                "E",
                "pool.capacity_reservation.placement_group: Karpenter 1.10.0 has no EC2NodeClass placementGroupSelector (it came in 1.11.0): set karpenter.chart_version to 1.11.0 or newer (the pin is 1.15.0), or use provisioner: cluster-autoscaler",
            )
        ],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected


@pytest.mark.parametrize(
    ("reservation", "message"),
    [
        (
            {"type": "capacity-block", "id": ODCR_ID, "placement_group": "pg"},
            "capacity_reservation.placement_group: odcr only; a Capacity Block's instances "
            "are placed close together already, and a placement group can make launches fail "
            "while the block has room: remove it",
        ),
        (
            {"type": "odcr", "id": ODCR_ID, "placement_group": ""},
            "capacity_reservation.placement_group: '' is not a placement group name (1 to "
            "255 ASCII characters, as EC2 CreatePlacementGroup takes)",
        ),
        (
            {"type": "odcr", "id": ODCR_ID, "placement_group": "gruppe-ä"},
            "capacity_reservation.placement_group: 'gruppe-ä' is not a placement group name "
            "(1 to 255 ASCII characters, as EC2 CreatePlacementGroup takes)",
        ),
    ],
    ids=["capacity-block", "empty", "not-ascii"],
)
def test_a_placement_group_is_refused_where_it_enters(reservation, message):
    with pytest.raises(ConfigError) as err:
        PoolSettings(capacity_reservation=reservation)
    assert str(err.value) == message
