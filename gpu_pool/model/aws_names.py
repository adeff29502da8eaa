"""AWS Region and zone names as EC2 spells them (us-east-1, us-east-1a, us-east-1-dfw-2a): the
one pattern of each that settings, plan and rules check names against.

A Local Zone's name is its Region, its location and its zone (us-west-2-lax-1a); its zone group
(what an account opts in to) is the name without the last letter (us-west-2-lax-1). EC2 API
Reference, "AvailabilityZone" (GroupName); Wavelength Zones (us-east-1-wl1-bos-wlz-1) are
neither form.
"""

from __future__ import annotations

import re

REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]$"
# A standard Availability Zone: its Region and one letter.
ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$")
# A Local Zone: its Region, its location's letters, a digit and a letter.
LOCAL_ZONE = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-[0-9])-[a-z]+-[0-9][a-z]$")


def is_zone(name: str) -> bool:
    """Whether `name` is an Availability Zone's or a Local Zone's (where nodes may go)."""
    return bool(ZONE.match(name) or LOCAL_ZONE.match(name))


def is_local_zone(name: str) -> bool:
    """Whether `name` is a Local Zone's (us-east-1-dfw-2a)."""
    return bool(LOCAL_ZONE.match(name))


def zone_region(zone: str) -> str | None:
    """The Region of an Availability Zone or a Local Zone (us-east-1a, us-east-1-dfw-2a ->
    us-east-1); None for another form."""
    if ZONE.match(zone):
        return zone[:-1]
    local = LOCAL_ZONE.match(zone)
    return local.group(1) if local else None


def zone_group(zone: str) -> str:
    """A Local Zone's group, what an account opts in to (us-east-1-dfw-2a -> us-east-1-dfw-2)."""
    return zone[:-1]
