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
    "account": "123456789012",
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
    ("pool", "facts", "expected"),
    [
        ({}, ReservationFacts(BLOCK, "us-east-1a", "p5.48xlarge", 4), []),
        (
            {},
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
            {},
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
            {},
            ReservationFacts(BLOCK, "us-east-1a", "p5.48xlarge", 2),
            [
                (
                    "W",
                    f"pools.train.max_size: 4, but {SOURCE} holds 2 instances: launches beyond "
                    "them fail; set 2",
                )
            ],
        ),
        (
            {"zones": ["us-east-1a", "us-east-1b"]},
            ReservationFacts(BLOCK, "us-east-1c", "p5.48xlarge", 4),
            [
                (
                    "E",
                    "pools.train.zones: 2 zones (us-east-1a, us-east-1b) with a capacity-block: a "
                    "block lives in one zone and its node groups may only use that zone's "
                    "subnets: list exactly the block's zone",
                ),
                (
                    "E",
                    f"pools.train.zones: us-east-1a, us-east-1b, but {SOURCE} is in us-east-1c: "
                    "list [us-east-1c]",
                ),
            ],
        ),
        (
            {"instance_types": ["p5.48xlarge", "p5e.48xlarge"]},
            ReservationFacts(BLOCK, "us-east-1a", "p5en.48xlarge", 4),
            [
                (
                    "E",
                    "pools.train.instance_types: 2 types (p5.48xlarge, p5e.48xlarge) with a "
                    "capacity-block: a block is one instance type, and its launch template names "
                    "exactly that one: list only it",
                ),
                (
                    "E",
                    f"pools.train.instance_types: p5.48xlarge, p5e.48xlarge, but {SOURCE} holds "
                    "p5en.48xlarge: list [p5en.48xlarge]",
                ),
            ],
        ),
    ],
    ids=["matches", "other-zone", "other-type", "fewer-instances", "two-zones", "two-types"],
)
def test_a_block_pool_is_judged_against_its_block(pool, facts, expected):
    train = {**SETTINGS["pools"]["train"], **pool}
    settings = load_settings({**SETTINGS, "pools": {"train": train}}, None)
    found = documented(
        check_settings(settings, plan_pools(settings), reservations={"train": facts}).all()
    )
    assert [("E" if f.error else "W", str(f)) for f in found] == expected
