"""#38 item 8: every synthesized launch template's reservation settings pair as EC2 documents
(tests/support/launch_template_rules.py), and the rule itself catches each documented refusal."""

from __future__ import annotations

import pytest

from tests.support.cfn import resources
from tests.support.launch_template_rules import capacity_reservation_violations

TARGET = {"CapacityReservationId": "cr-0123456789abcdef0"}


@pytest.mark.parametrize(
    ("data", "violations"),
    [
        ({"CapacityReservationSpecification": {"CapacityReservationPreference": "open"}}, 0),
        ({"CapacityReservationSpecification": {"CapacityReservationTarget": TARGET}}, 0),
        (
            {
                "CapacityReservationSpecification": {
                    "CapacityReservationPreference": "capacity-reservations-only",
                    "CapacityReservationTarget": TARGET,
                }
            },
            0,
        ),
        (
            {
                "CapacityReservationSpecification": {
                    "CapacityReservationPreference": "open",
                    "CapacityReservationTarget": TARGET,
                }
            },
            1,
        ),
        ({"CapacityReservationSpecification": {"CapacityReservationPreference": "targeted"}}, 1),
        ({"InstanceMarketOptions": {"MarketType": "capacity-block"}}, 1),
        (
            {
                "InstanceMarketOptions": {"MarketType": "capacity-block"},
                "CapacityReservationSpecification": {"CapacityReservationTarget": TARGET},
            },
            0,
        ),
    ],
)
def test_the_rule_catches_what_ec2_refuses(data, violations):
    assert len(capacity_reservation_violations(data)) == violations


@pytest.mark.parametrize(
    "template", ["training_template", "ultraserver_template", "default_template", "efa_dra_template"]
)
def test_every_launch_template_pairs_its_reservation_settings_as_ec2_takes_them(template, request):
    found = resources(request.getfixturevalue(template), "AWS::EC2::LaunchTemplate")
    reserved = 0
    for logical_id, launch_template in found.items():
        data = launch_template["Properties"]["LaunchTemplateData"]
        reserved += "CapacityReservationSpecification" in data
        assert capacity_reservation_violations(data) == [], logical_id
    if template in ("training_template", "ultraserver_template"):
        assert reserved, "the reserved pools' launch templates name their reservations"
