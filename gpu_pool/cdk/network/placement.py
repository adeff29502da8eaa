"""Which of the given subnets each of a pool's placements uses."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Token
from aws_cdk import aws_ec2 as ec2

from gpu_pool.model.aws_names import is_local_zone
from gpu_pool.settings import ConfigError


def subnets_by_zone(
    setting: str, zones: Sequence[str], subnets: Sequence[ec2.ISubnet]
) -> dict[str | None, list[ec2.ISubnet]]:
    """Subnets per node group zone: all but the Local Zones' (zone None: a pool that names no
    zone stays in the Region's Availability Zones), or those in each listed zone."""
    if not subnets:
        raise ConfigError("subnets is empty; pass the private subnets for GPU nodes")
    if not zones:
        regional = [s for s in subnets if not is_local_zone(s.availability_zone)]
        if not regional:
            raise ConfigError(
                f"{setting}.zones: empty, and every subnet is in a Local Zone; a pool goes to a "
                "Local Zone only when it names it: list it in zones"
            )
        return {None: regional}
    if any(Token.is_unresolved(s.availability_zone) for s in subnets):
        raise ConfigError(
            f"{setting}.zones: the subnets' availability zones are only known at deploy time "
            "(tokens); pass subnets with literal zones (ec2.Subnet.from_subnet_attributes with "
            "availability_zone) or drop zones"
        )
    placements: dict[str | None, list[ec2.ISubnet]] = {}
    for zone in zones:
        in_zone = [s for s in subnets if s.availability_zone == zone]
        if not in_zone:
            known = ", ".join(sorted({str(s.availability_zone) for s in subnets}))
            raise ConfigError(
                f"{setting}.zones: no subnet in {zone} (subnets are in {known}); add a subnet "
                "there or drop the zone"
            )
        placements[zone] = in_zone
    return placements
