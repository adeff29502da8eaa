"""AWS Region and Availability Zone names as EC2 spells them (us-east-1, us-east-1a): the one
pattern of each that settings, plan and rules check names against."""

from __future__ import annotations

import re

REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]$"
# A standard Availability Zone: its Region and one letter (Local and Wavelength Zones differ).
ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$")


def zone_region(zone: str) -> str | None:
    """The Region of a standard Availability Zone name (us-east-1a -> us-east-1); None for
    another form."""
    return zone[:-1] if ZONE.match(zone) else None
