"""Guardrails of training pools written with the issue-32 fixes: one case per rule, each with
the exact message users read (the older training cases are in test_checks.py)."""

import pytest

from tests.support import rules

GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/training"


def pool(**settings):
    return {"pool": settings}


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
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected
