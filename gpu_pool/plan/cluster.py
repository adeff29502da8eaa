"""The new cluster's own zones and whether it runs EKS Auto Mode, resolved from the settings once
for the rules (checks/cluster.py) and the cluster (cdk/cluster/eks.py).

The VPC's zones are the cluster's (`cluster.zones`, or the region's first three): pools place
their nodes inside them and never change them, so no pool change touches the VPC, its subnets,
its NAT gateway or the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpu_pool.model.aws_names import ZONE, is_local_zone
from gpu_pool.settings import AppSettings

# What aws-cdk-lib's Vpc takes without availability_zones (max_azs=3): the region's first
# three zones, as the availability-zones lookup lists them.
DEFAULT_ZONE_COUNT = 3


def cluster_zones(settings: AppSettings, known: Sequence[str]) -> list[str] | None:
    """The new VPC's zones: `cluster.zones`, else the first three Availability Zones of `known`
    (the region's zones from the cached lookup, which also lists the Local Zones the account
    has opted in to: the CDK CLI's availability-zones provider keeps every `available` zone of
    an unfiltered DescribeAvailabilityZones, and caches only names (aws/aws-cdk,
    packages/aws-cdk/lib/context-providers/availability-zones.ts); EKS refuses Local Zone
    subnets at cluster creation). None when the region's zones are not known yet (an
    environment-agnostic stack, or the lookup's first pass): the VPC takes the CDK's own three
    (two placeholders in an agnostic stack) and pools' zones are judged once the lookup is
    cached."""
    if settings.cluster.zones:
        return list(settings.cluster.zones)
    standard = [z for z in known if ZONE.match(z)]
    if standard:
        return standard[:DEFAULT_ZONE_COUNT]
    return None


def placeholder_zones(settings: AppSettings) -> list[str]:
    """Before the zone lookup is cached, the Availability Zones the pools name (in order of
    first mention): the VPC of that first pass holds them so the pools find their subnets. The
    CDK CLI synthesizes again with the lookup's answer and deploys only that."""
    return [z for z in _named_zones(settings) if ZONE.match(z)]


def local_zones(settings: AppSettings) -> list[str]:
    """The Local Zones the pools name, in order of first mention: each gets a node-only
    private subnet in the new VPC (cdk/network/local_zones.py)."""
    return [z for z in _named_zones(settings) if is_local_zone(z)]


def _named_zones(settings: AppSettings) -> list[str]:
    return list(dict.fromkeys(z for _, pool in settings.pool_settings() for z in pool.zones))


def uses_auto_mode(settings: AppSettings) -> bool:
    """Whether the cluster needs EKS Auto Mode compute: some pool uses it."""
    return any(pool.provisioner == "auto-mode" for _, pool in settings.pool_settings())


def auto_mode_enabled(settings: AppSettings) -> bool:
    """Whether the new cluster runs EKS Auto Mode: `cluster.auto_mode`, else while some pool
    uses it."""
    chosen = settings.cluster.auto_mode
    return uses_auto_mode(settings) if chosen is None else chosen
