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

from collections.abc import Sequence
from typing import cast

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

# A secondary block beside aws-cdk-lib's default VPC block (10.0.0.0/16), allowed with a
# 10.0.0.0/8 primary (VPC user guide, "IPv4 CIDR block association restrictions").
LOCAL_ZONE_CIDR = "10.1.0.0/16"
# One /20 (4091 usable addresses) per Local Zone, by the zone's place in sorted order: a new
# Local Zone that sorts before a named one moves (replaces) that one's subnet.
_SUBNET_MASK = 20


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
    for index, zone in enumerate(sorted(zones)):
        subnet = ec2.PrivateSubnet(
            scope,
            f"LocalZoneSubnet-{zone}",
            vpc_id=vpc.vpc_id,
            availability_zone=zone,
            cidr_block=f"10.1.{index * 2 ** (24 - _SUBNET_MASK)}.0/{_SUBNET_MASK}",
        )
        subnet.node.add_dependency(block)
        subnet.add_default_nat_route(nat.ref)
        subnets.append(subnet)
    return subnets
