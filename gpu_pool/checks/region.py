"""The rules about what the stack's Region offers: instance types per zone, EKS NVIDIA AMI types,
and reserved capacity of the Region (and account) the stack deploys to.

Sources: EC2 DescribeInstanceTypeOfferings (location type availability-zone: the zones of the
Region that offer a type; a launch of a type in a zone that does not offer it fails with
Unsupported); the EKS user guide's AMI ID pages (the public SSM parameter of an AMI type exists
where EKS publishes it); EC2 UG "Capacity Reservations" (a reservation holds capacity in one
Availability Zone of its Region) and "Capacity Reservation groups" (a resource group holds
resources of one Region; reservations shared from another account join a group of one's own).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from gpu_pool.model.aws_names import is_local_zone, zone_region
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.cluster import cluster_zones
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.quota import quota_needs
from gpu_pool.plan.region import (
    RegionFacts,
    ami_parameter,
    pool_ami_types,
    pool_instance_types,
)
from gpu_pool.settings import AppSettings

_CACHED = "EC2 DescribeInstanceTypeOfferings, cached in cdk.context.json"
# arn:<partition>:resource-groups:<region>:<account>:group/<name>
_GROUP_ARN = re.compile(r"^arn:[a-z-]+:resource-groups:(?P<region>[^:]+):(?P<account>[0-9]{12}):")


def check_pool_region(
    plan: PoolPlan,
    facts: RegionFacts,
    cluster: Sequence[str] | None,
    minor: str,
    *,
    existing: bool = False,
) -> list[Finding]:
    """A pool's instance types against the zones that offer them (its own zones, else the
    cluster's: `cluster`, None when not known yet) and its AMI types against those the Region
    publishes for the cluster's `minor`. `existing`: the cluster is not the app's, so its zones
    are those of its subnets, and only those can be advised."""
    return [
        *_check_offerings(plan, facts, cluster, existing),
        *_check_ami_types(plan, facts, minor),
    ]


def cluster_zone_names(settings: AppSettings, known: Sequence[str]) -> list[str] | None:
    """The zones the cluster's subnets are in, where a pool without zones goes: an existing
    cluster's subnet zones but Local Zones (cdk/network/placement.py), or the new VPC's
    (plan/cluster.py; None before the zone lookup is cached)."""
    existing = settings.cluster.existing
    if existing is None:
        return cluster_zones(settings, known)
    return [z for z in existing.subnets_by_zone if not is_local_zone(z)]


def _check_offerings(
    plan: PoolPlan, facts: RegionFacts, cluster: Sequence[str] | None, existing: bool
) -> Iterator[Finding]:
    prefix, region = plan.setting, facts.region
    # A zone of another Region is GP-APP-15's; on an existing cluster, a zone without its
    # subnets is GP-APP-13's: neither is a zone that lacks the type.
    own = [
        z
        for z in plan.settings.zones
        if zone_region(z) == region and not (existing and cluster is not None and z not in cluster)
    ]
    for name in pool_instance_types(plan):
        offered = facts.offerings.get(name)
        if offered is None:
            continue
        if not offered:
            yield error(
                "GP-REGION-01",
                f"{prefix}.instance_types",
                f"'{name}' is not offered in {region} ({_CACHED}): choose a type that is, or "
                "deploy the pool to a Region that offers it",
            )
            continue
        where = ", ".join(offered)
        missing = [z for z in own if z not in offered]
        usable = [z for z in cluster or () if z in offered] if existing else list(offered)
        if missing and (plan.provisioner == "cluster-autoscaler" or len(missing) == len(own)):
            # A node group per zone never launches where its type is missing; Karpenter and
            # Auto Mode only launch where it is offered, so they fail only if it is nowhere.
            verb = "does" if len(missing) == 1 else "do"
            if usable:
                which = "the cluster's zones" if existing else f"the zones of {region}"
                advice = f"{which} that do: {', '.join(usable)}: choose among them"
            else:
                advice = (
                    f"none of the cluster's zones do; {region} offers it in {where}: give the "
                    "cluster subnets there (cluster.existing.subnets_by_zone), or choose "
                    "another type"
                )
            yield error(
                "GP-REGION-02",
                f"{prefix}.zones",
                f"{', '.join(missing)} {verb} not offer '{name}' ({_CACHED}); {advice}",
            )
        elif (
            not plan.settings.zones
            and plan.provisioner == "cluster-autoscaler"
            and cluster
            and (lacking := [z for z in cluster if z not in offered])
            and set(cluster) & set(offered)
        ):
            # Without zones, one node group spans every zone of the cluster, and EKS refuses a
            # node group with a subnet in a zone that lacks its type (CreateNodegroup: "Your
            # requested instance type ... is not supported in your requested Availability
            # Zone", eksctl-io/eksctl#6461).
            verb = "does" if len(lacking) == 1 else "do"
            usable = [z for z in cluster if z in offered]
            yield error(
                "GP-REGION-10",
                f"{prefix}.zones",
                f"empty, so the pool's node group spans every zone of the cluster, and "
                f"{', '.join(lacking)} {verb} not offer '{name}' ({_CACHED}), which EKS "
                f"refuses: set zones to those of the cluster that do: {', '.join(usable)}",
            )
        elif not own and cluster and not set(cluster) & set(offered):
            zones = (
                "subnets in one of those zones (cluster.existing.subnets_by_zone)"
                if existing
                else "one of those zones (cluster.zones, before its first deploy)"
            )
            yield error(
                "GP-REGION-03",
                f"{prefix}.instance_types",
                f"'{name}' is offered in none of the cluster's zones ({', '.join(cluster)}); "
                f"{region} offers it in {where} ({_CACHED}): choose another type, or give the "
                f"cluster {zones}",
            )


def _check_ami_types(plan: PoolPlan, facts: RegionFacts, minor: str) -> Iterator[Finding]:
    published = [t for t, yes in facts.ami_types.items() if yes]
    for ami_type in pool_ami_types(plan):
        if facts.ami_types.get(ami_type) is not False:
            continue
        # The same CPU's type of the other family (AL2023_x86_64_NVIDIA: BOTTLEROCKET_x86_64_...).
        instead = [t for t in published if t.split("_", 1)[1] == ami_type.split("_", 1)[1]]
        given = plan.settings.ami_type is not None
        fix = " or ".join(
            f"ami_family {t.split('_', 1)[0]}" + (f" with ami_type {t}" if given else f" ({t})")
            for t in instead
        )
        if instead:
            advice = f"set {fix}, which is, or deploy the pool to another Region"
        elif published:
            advice = "deploy the pool to a Region that publishes it"
        else:
            # Nothing of this minor published here: a Region gap, or a minor EKS has not
            # published anywhere yet (its AMIs follow a new minor's release).
            advice = (
                f"deploy the pool to a Region that publishes it; no NVIDIA AMI looked up for "
                f"Kubernetes {minor} is published in {facts.region}: if the minor is new, it "
                "may be published nowhere yet, so set an older cluster.kubernetes_version "
                "until it is"
            )
        yield error(
            "GP-REGION-04",
            f"{plan.setting}.{'ami_type' if given else 'ami_family'}",
            f"{ami_type} is not published in {facts.region} for Kubernetes {minor} (no SSM "
            f"parameter {ami_parameter(ami_type, minor)}, cached in cdk.context.json: "
            "`cdk context --reset` its entry to look again): " + advice,
        )


def reservations_in_region(
    reservations: Mapping[str, ReservationFacts | None], region: str | None
) -> dict[str, ReservationFacts]:
    """The looked-up reservations (pool name -> facts) EC2 has in the stack's Region (all that
    exist when the Region is unknown). The others are GP-REGION-05's and GP-REGION-07's alone:
    their zone and type say nothing about this Region."""
    return {
        name: facts
        for name, facts in reservations.items()
        if facts is not None and (region is None or zone_region(facts.zone) in (region, None))
    }


def check_reservation_region(
    plan: PoolPlan,
    looked_up: Mapping[str, ReservationFacts | None],
    account: str | None,
    region: str | None,
) -> list[Finding]:
    """A pool's reserved capacity in another Region than the stack's (`looked_up`: each
    reservation as looked up, a Capacity Block's always and an ODCR's with region lookups; None
    where EC2 has none by its id in the stack's Region and account), or a reservation group of
    another account or Region: a launch uses only reservations of its own Region."""
    reservation = plan.settings.capacity_reservation
    if reservation is None:
        return []
    setting = f"{plan.setting}.capacity_reservation"
    found = []
    if plan.name in looked_up and looked_up[plan.name] is None:
        kind = "block" if reservation.capacity_block else "reservation"
        found.append(
            error(
                "GP-REGION-07",
                f"{setting}.id",
                f"EC2 has no reservation {reservation.id} in {region} for account {account} "
                "(Cloud Control GetResource, cached in cdk.context.json): a launch uses only "
                f"reservations of its own Region and account; name a {kind} of "
                f"{_where(account, region)}, or deploy the pool's cluster to the Region the "
                f"{kind} was {'bought' if reservation.capacity_block else 'made'} in (the "
                f"answer is cached: `cdk context --reset` its entry if the {kind} appears here "
                "later)",
            )
        )
    facts = looked_up.get(plan.name)
    elsewhere = None if facts is None else zone_region(facts.zone)
    if facts is not None and region is not None and elsewhere not in (region, None):
        found.append(
            error(
                "GP-REGION-05",
                f"{setting}.id",
                f"{facts.reservation_id} is in {facts.zone} ({elsewhere}, cdk.context.json), "
                f"the stack in {region}: a launch uses only reservations of its own Region; "
                f"use a reservation in {region}, or deploy the pool's cluster to {elsewhere}",
            )
        )
    match = _GROUP_ARN.match(reservation.resource_group_arn or "")
    wrong = [
        f"{what} {match[key]}, the stack's {ours}"
        for what, key, ours in (("Region", "region", region), ("account", "account", account))
        if match is not None and ours is not None and match[key] != ours
    ]
    if wrong:
        found.append(
            error(
                "GP-REGION-06",
                f"{setting}.resource_group_arn",
                f"the group is in {'; '.join(wrong)}: a group holds reservations of its own "
                "Region, and reservations shared from another account are grouped in the "
                f"account that launches: target a group of {_where(account, region)}",
            )
        )
    return found


def _where(account: str | None, region: str | None) -> str:
    """The stack's account and Region as far as they are known: `account 1234... in us-east-1`."""
    return " in ".join(x for x in (account and f"account {account}", region) if x)


def check_vcpu_quotas(plans: Sequence[PoolPlan], facts: RegionFacts) -> list[Finding]:
    """GP-REGION-09: the pools' vCPUs at max size (plan/quota.py), summed per quota (the pools
    of one account and Region share it), above its looked-up value. A warning: other instances
    share the quota too, and an increase may be on its way; launches past it fail, so the pools
    stop short of max_size."""
    found = []
    for quota, pools in quota_needs(plans).items():
        value = facts.vcpu_quotas.get(quota.code)
        total = sum(vcpus for _, vcpus in pools)
        if value is None or total <= value:
            continue
        shares = ", ".join(f"{plan.name} {vcpus}" for plan, vcpus in pools)
        found.append(
            warning(
                "GP-REGION-09",
                " + ".join(f"{plan.setting}.max_size" for plan, _ in pools),
                f"at max size the pools need up to {total} vCPUs of {quota.name} ({quota.code}; "
                f"{shares}), and the account's quota in {facts.region} is {value:g} (Service "
                f"Quotas, cached in cdk.context.json): launches past it fail "
                f"({quota.launch_error}), so the pools stop short of max_size. Request an "
                "increase (aws service-quotas request-service-quota-increase --service-code ec2 "
                f"--quota-code {quota.code} --desired-value {total} --region {facts.region}), or "
                "lower max_size; `cdk context --reset` the entry to read the quota again",
            )
        )
    return found
