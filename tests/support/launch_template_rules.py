"""What EC2 refuses in a launch template's reservation settings, as its API reference documents
it; the synthesized launch templates are held to it (tests/synth/test_launch_template_rules.py),
since CloudFormation's schema types each field but not how they pair."""

from __future__ import annotations

from typing import Any

# EC2 API reference, CapacityReservationSpecification: "You can only specify
# CapacityReservationPreference and CapacityReservationTarget if the
# CapacityReservationPreference is capacity-reservations-only."
TARGET_PREFERENCE = "capacity-reservations-only"
PREFERENCES = ("capacity-reservations-only", "open", "none")


def capacity_reservation_violations(data: dict[str, Any]) -> list[str]:
    """The rules a LaunchTemplateData breaks in its CapacityReservationSpecification and
    InstanceMarketOptions; empty when EC2 would take them."""
    spec = data.get("CapacityReservationSpecification") or {}
    preference = spec.get("CapacityReservationPreference")
    target = spec.get("CapacityReservationTarget")
    found = []
    if preference is not None and preference not in PREFERENCES:
        found.append(f"CapacityReservationPreference {preference!r} is not one of {PREFERENCES}")
    if preference is not None and target is not None and preference != TARGET_PREFERENCE:
        found.append(
            f"CapacityReservationPreference {preference!r} with a CapacityReservationTarget: EC2 "
            f"takes both only with {TARGET_PREFERENCE!r}"
        )
    # EC2 user guide, "Launch instances using Capacity Blocks": a Capacity Block launch names
    # market type capacity-block and the block's id as the Capacity Reservation target.
    market = (data.get("InstanceMarketOptions") or {}).get("MarketType")
    if market == "capacity-block" and not (target or {}).get("CapacityReservationId"):
        found.append("MarketType capacity-block without a CapacityReservationTarget id")
    return found
