"""Node-only private subnets in the Local Zones the pools name, in the VPC the app creates.

EKS runs managed node groups in Local Zones but cannot place its own network interfaces there, so
Local Zone subnets must not be given at cluster creation (EKS user guide, "Launch low-latency EKS
clusters with AWS Local Zones"): these subnets go to the pools only, never to the cluster or its
system nodes. NAT gateways are not offered in every Local Zone, so each subnet's default route
goes to the VPC's NAT gateway in an Availability Zone. The subnets take their addresses from a
secondary CIDR block of their own, so adding one changes none of the VPC's existing subnets (the
default VPC layout may use the whole primary block).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import cast

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from gpu_pool.settings import ConfigError

# A secondary block beside aws-cdk-lib's default VPC block (10.0.0.0/16), allowed with a
# 10.0.0.0/8 primary (VPC user guide, "IPv4 CIDR block association restrictions").
LOCAL_ZONE_CIDR = "10.1.0.0/16"
# One /20 (4091 usable addresses) per Local Zone, of the block's 16. A subnet's CidrBlock is
# create-only (CloudFormation, AWS::EC2::Subnet), so each zone's /20 follows from its own name
# (CRC-32 mod 16), not from the other zones named: adding or removing a Local Zone pool never
# moves a deployed zone's subnet. Two named zones of one slot (rare) take the next free ones in
# name order.
_SUBNET_MASK = 20
_SLOTS = 2 ** (_SUBNET_MASK - 16)


def subnet_slots(zones: Sequence[str]) -> dict[str, int]:
    """Each Local Zone's /20 of LOCAL_ZONE_CIDR, by index."""
    taken: dict[int, str] = {}
    for zone in sorted(set(zones)):
        slot = zlib.crc32(zone.encode()) % _SLOTS
        while slot in taken:
            slot = (slot + 1) % _SLOTS
        taken[slot] = zone
    return {zone: slot for slot, zone in taken.items()}


def local_zone_subnets(scope: Construct, vpc: ec2.Vpc, zones: Sequence[str]) -> list[ec2.ISubnet]:
    """A private subnet in each of `zones` (Local Zones), routed to the VPC's first NAT
    gateway; none (and no CIDR block) without zones."""
    if not zones:
        return []
    block = ec2.CfnVPCCidrBlock(
        scope, "LocalZoneCidr", vpc_id=vpc.vpc_id, cidr_block=LOCAL_ZONE_CIDR
    )
    # aws-cdk-lib's Vpc puts its first NAT gateway (there is always one: nat_gateways >= 1)
    # in the first public subnet, as its child NATGateway.
    nat = cast(ec2.CfnNatGateway, vpc.public_subnets[0].node.find_child("NATGateway"))
    subnets: list[ec2.ISubnet] = []
    if len(set(zones)) > _SLOTS:
        raise ConfigError(
            f"pools' zones: {len(set(zones))} Local Zones; the VPC's Local Zone block "
            f"{LOCAL_ZONE_CIDR} holds {_SLOTS} /{_SUBNET_MASK} subnets: name {_SLOTS} or fewer"
        )
    slots = subnet_slots(zones)
    for zone in sorted(slots):
        subnet = ec2.PrivateSubnet(
            scope,
            f"LocalZoneSubnet-{zone}",
            vpc_id=vpc.vpc_id,
            availability_zone=zone,
            cidr_block=f"10.1.{slots[zone] * 2 ** (24 - _SUBNET_MASK)}.0/{_SUBNET_MASK}",
        )
        subnet.node.add_dependency(block)
        subnet.add_default_nat_route(nat.ref)
        subnets.append(subnet)
    return subnets
