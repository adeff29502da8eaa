"""The rules about the new cluster's own zones and Auto Mode (what they resolve to is
plan/cluster.py's). EKS needs the cluster's subnets in at least two Availability
Zones (EKS user guide, "View Amazon EKS networking requirements for VPC and subnets"), and none
in a Local Zone: EKS cannot place its network interfaces there, so Local Zone subnets must not be
given at cluster creation (EKS user guide, "Launch low-latency EKS clusters with AWS Local
Zones"). A pool's Local Zone gets node-only subnets instead (cdk/network/local_zones.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from gpu_pool.model.aws_names import ZONE, is_local_zone
from gpu_pool.model.findings import Finding, error
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.cluster import cluster_zones, placeholder_zones, uses_auto_mode
from gpu_pool.settings import AppSettings

MIN_ZONES = 2


def check_cluster(settings: AppSettings, known: Sequence[str]) -> list[Finding]:
    """The rules about the cluster's zones and Auto Mode setting; `known`: the region's zones
    from the cached lookup (empty: not looked up, nothing judged against it)."""
    findings = list(_check_auto_mode(settings))
    if settings.cluster.existing is not None:
        return findings + list(_check_new_cluster_settings(settings))
    findings += _check_named_zones(settings)
    findings += _check_zones_never_looked_up(settings)
    zones = cluster_zones(settings, known)
    if zones is None:
        return findings
    source = "cluster.zones" if settings.cluster.zones else "the region's first three"
    for prefix, pool in settings.pool_settings():
        # A zone the account does not have is GP-APP-16's (GP-APP-29's) to name; a Local
        # Zone is never the cluster's: its pools get node-only subnets.
        outside = [
            z
            for z in pool.zones
            if z not in zones and not is_local_zone(z) and (not known or z in known)
        ]
        if outside:
            findings.append(
                error(
                    "GP-APP-19",
                    f"{prefix}.zones",
                    f"{', '.join(outside)} not among the cluster's zones ({', '.join(zones)}: "
                    f"{source}): choose among them, or list every zone the cluster needs in "
                    "cluster.zones before the first deploy (a deployed cluster keeps the "
                    "zones it was created in: EKS takes no subnet of another zone)",
                )
            )
    return findings


def check_reservation_zones(
    settings: AppSettings, reservations: Mapping[str, ReservationFacts], known: Sequence[str]
) -> list[Finding]:
    """Each looked-up reservation (pool name -> facts) must be in one of the cluster's zones:
    its nodes can only use subnets of its zone. A Local Zone's is never the cluster's: its
    pool names it (GP-TRAIN-15) and gets a node-only subnet there."""
    zones = cluster_zones(settings, known)
    if settings.cluster.existing is not None or zones is None:
        return []
    return [
        error(
            "GP-APP-20",
            "cluster.zones",
            f"{facts.reservation_id} (pool {name}) is in {facts.zone}, outside the cluster's "
            f"zones ({', '.join(zones)}): list {facts.zone} in cluster.zones before the "
            "cluster's first deploy (a deployed cluster keeps the zones it was created in)",
        )
        for name, facts in reservations.items()
        if facts.zone not in zones and not is_local_zone(facts.zone)
    ]


def _check_zones_never_looked_up(settings: AppSettings) -> Iterator[Finding]:
    """Without an account the CDK cannot look up the region's zones, so the VPC would hold
    only the zones the pools name (placeholder_zones), forever: one zone for a lone EFA or
    Capacity Block pool (a cluster EKS refuses), and a new pool zone would replace the
    subnets. Such a stack names its cluster's zones itself."""
    if settings.account is not None or settings.region is None or settings.cluster.zones:
        return
    named = placeholder_zones(settings)
    if named:
        yield error(
            "GP-APP-27",
            "cluster.zones",
            f"required when pools name zones ({', '.join(named)}) and account is unset: "
            "without an account the region's zones cannot be looked up, and the VPC would "
            f"hold only the pools' zones; list two or more zones of {settings.region} that "
            "include them, or set account",
        )


def _check_named_zones(settings: AppSettings) -> Iterator[Finding]:
    zones = settings.cluster.zones
    if not zones:
        return
    region = settings.region
    if region is None:
        yield error(
            "GP-APP-21",
            "cluster.zones",
            "needs region: zone names only mean something in a known region",
        )
    for zone in zones:
        if is_local_zone(zone):
            yield error(
                "GP-APP-28",
                "cluster.zones",
                f"'{zone}' is a Local Zone: EKS refuses Local Zone subnets at cluster creation "
                '(EKS user guide, "Launch low-latency EKS clusters with AWS Local Zones"); '
                "list only Availability Zones here and name the Local Zone in the pool's zones, "
                "which get node-only subnets there",
            )
        elif not ZONE.match(zone) or (region is not None and zone[:-1] != region):
            where = f"{region}, such as {region}a" if region else "a region, such as us-east-1a"
            yield error(
                "GP-APP-22", "cluster.zones", f"'{zone}' is not an availability zone of {where}"
            )
    distinct = list(dict.fromkeys(zones))
    if len(distinct) < MIN_ZONES:
        yield error(
            "GP-APP-23",
            "cluster.zones",
            f"{len(distinct)} distinct zone ({', '.join(distinct)}): EKS needs the cluster's "
            "subnets in at least two Availability Zones; list two or more (pools still "
            "choose their own zone among them)",
        )
    elif len(distinct) != len(zones):
        yield error("GP-APP-24", "cluster.zones", "lists a zone twice")


# The settings only a cluster the app creates has, and what an existing cluster has instead.
NEW_CLUSTER_ONLY = {
    "zones": "its pools use the zones of cluster.existing.subnets_by_zone",
    "nat_gateways": "its VPC's NAT gateways are its own",
    "endpoint_access": "its endpoint is looked up (DescribeCluster)",
    "public_access_cidrs": "its endpoint is looked up (DescribeCluster)",
    "logging": "its control-plane logging is its own",
    "system_nodes": "its own nodes run the controllers",
}


def _check_new_cluster_settings(settings: AppSettings) -> Iterator[Finding]:
    """A setting of a cluster the app creates, set on an existing one: refused, each by name,
    rather than ignored (cluster.auto_mode: GP-APP-25). cluster.kubernetes_version is not
    among them: it is the placeholder's until the lookup answers, then the cluster's wins."""
    for name, instead in NEW_CLUSTER_ONLY.items():
        if name in settings.cluster.model_fields_set:
            yield error(
                "GP-APP-18",
                f"cluster.{name}",
                "set, but the app does not create this cluster (cluster.existing), and "
                f"{instead}: remove it",
            )


def _check_auto_mode(settings: AppSettings) -> Iterator[Finding]:
    chosen = settings.cluster.auto_mode
    if chosen is None:
        return
    if settings.cluster.existing is not None:
        yield error(
            "GP-APP-25",
            "cluster.auto_mode",
            "set, but the app does not change a cluster it does not own (cluster.existing): "
            "remove it",
        )
    elif not chosen and uses_auto_mode(settings):
        auto = [p for p, pool in settings.pool_settings() if pool.provisioner == "auto-mode"]
        yield error(
            "GP-APP-26",
            "cluster.auto_mode",
            f"false, but provisioner auto-mode is used by {', '.join(auto)}: remove it (or "
            "set true), or move those pools to another provisioner",
        )
