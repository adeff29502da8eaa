"""A Capacity Block pool against its block as EC2 describes it (the cached lookup): each rule
with its exact message."""

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import load_settings
from tests.support.rules import documented

BLOCK = "cr-0123456789abcdef0"
SETTINGS = {
    "region": "us-east-1",
    "pools": {
        "train": {
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "max_size": 4,
            "capacity_reservation": {"type": "capacity-block", "id": BLOCK},
        }
    },
}
SOURCE = f"reservation {BLOCK} (cdk.context.json)"


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (ReservationFacts(BLOCK, "us-east-1a", "p5.48xlarge", 4), []),
        (
            ReservationFacts(BLOCK, "us-east-1b", "p5.48xlarge", 4),
            [
                (
                    "E",
                    f"pools.train.zones: us-east-1a, but {SOURCE} is in us-east-1b: list "
                    "[us-east-1b]",
                )
            ],
        ),
        (
            ReservationFacts(BLOCK, "us-east-1a", "p5e.48xlarge", 4),
            [
                (
                    "E",
                    f"pools.train.instance_types: p5.48xlarge, but {SOURCE} holds p5e.48xlarge: "
                    "list [p5e.48xlarge]",
                )
            ],
        ),
        (
            ReservationFacts(BLOCK, "us-east-1a", "p5.48xlarge", 2),
            [
                (
                    "W",
                    f"pools.train.max_size: 4, but {SOURCE} holds 2 instances: launches beyond "
                    "them fail; set 2",
                )
            ],
        ),
    ],
    ids=["matches", "other-zone", "other-type", "fewer-instances"],
)
def test_a_block_pool_is_judged_against_its_block(facts, expected):
    settings = load_settings(SETTINGS, None)
    found = documented(
        check_settings(settings, plan_pools(settings), reservations={"train": facts}).all()
    )
    assert [("E" if f.error else "W", str(f)) for f in found] == expected
