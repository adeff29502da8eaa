"""The rules about an existing cluster (`cluster.existing`) and what its lookup found
(plan/existing_cluster.py): whether it can be looked up at all, whether the stack's own kubectl
provider can be given access (EKS user guide, "Change authentication mode to use access
entries"), where its GPU nodes go, and the add-ons it has: the Pod Identity agent its
controllers need, and the CloudWatch add-on metrics.gpu: cloudwatch would create again.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.checks.app import uses_autoscaler, uses_karpenter
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.plan.cluster import uses_auto_mode
from gpu_pool.plan.existing_cluster import (
    CONFIG_MAP_ONLY,
    POD_IDENTITY_AGENT,
    ClusterFacts,
    needs_lookup,
)
from gpu_pool.plan.metrics import CLOUDWATCH_ADDON
from gpu_pool.settings import AppSettings


def check_existing_cluster(settings: AppSettings, facts: ClusterFacts | None) -> list[Finding]:
    """An existing cluster's rules; `facts`: its lookup as cached (placeholders while unchecked),
    None where nothing was looked up."""
    existing = settings.cluster.existing
    if existing is None:
        return []
    known = facts if facts is not None and not facts.placeholder else None
    findings = list(_check_auto_mode(settings, known))
    if facts is None:
        return findings + list(_check_lookup_possible(settings))
    if known is None:
        return findings
    return [
        *findings,
        *_check_access_entries(settings, known),
        *_check_nodes(settings, known),
        *_check_kubectl_route(settings, known),
    ]


def _check_auto_mode(settings: AppSettings, facts: ClusterFacts | None) -> Iterator[Finding]:
    """An auto-mode pool needs the cluster to run Auto Mode already (the app does not change a
    cluster it does not own) and its cluster security group, which the NodeClasses select."""
    existing = settings.cluster.existing
    if existing is None or not uses_auto_mode(settings):
        return
    if existing.cluster_security_group_id is None:
        yield error(
            "GP-APP-07",
            "cluster.existing.cluster_security_group_id",
            "required with an auto-mode pool: its NodeClass puts the nodes in the cluster "
            "security group; copy it from `aws eks describe-cluster` "
            "(resourcesVpcConfig.clusterSecurityGroupId)",
        )
    name = settings.cluster.name
    if facts is None:
        yield warning(
            "GP-APP-08",
            "cluster.existing",
            f"auto-mode pools need EKS Auto Mode compute enabled on {name} (aws eks "
            "describe-cluster: computeConfig.enabled true), which is not looked up; without it "
            "the deploy fails where it applies the pool's NodeClass (eks.amazonaws.com/v1, a "
            "kind only Auto Mode serves)",
        )
    elif not facts.auto_mode:
        yield error(
            "GP-APP-36",
            "cluster.existing",
            f"{name} does not run EKS Auto Mode (DescribeCluster computeConfig.enabled is "
            "false, cached in cdk.context.json), so the deploy would fail where it applies an "
            "auto-mode pool's NodeClass: turn Auto Mode on for the cluster (EKS user guide, "
            '"Enable EKS Auto Mode on an existing cluster"), reset the cluster\'s entry '
            "(`cdk context --reset`) and synthesize again, or give the pool another provisioner",
        )


def _check_lookup_possible(settings: AppSettings) -> Iterator[Finding]:
    existing = settings.cluster.existing
    if (
        existing is not None
        and needs_lookup(existing)
        and not (settings.account and settings.region)
    ):
        yield error(
            "GP-APP-30",
            "cluster.existing",
            f"{settings.cluster.name} is looked up in the stack's account and Region, and this "
            "stack has none: set account and region, or set subnets_by_zone and a kubectl "
            "provider of your own (kubectl_provider_service_token, kubectl_provider_role_arn)",
        )


def _check_access_entries(settings: AppSettings, facts: ClusterFacts) -> Iterator[Finding]:
    """The stack's own kubectl provider, and Karpenter's nodes, get their access through access
    entries, which a cluster in CONFIG_MAP mode has not."""
    existing = settings.cluster.existing
    if existing is None or facts.authentication_mode != CONFIG_MAP_ONLY:
        return
    who = [
        what
        for what, needs in (
            ("the stack's kubectl provider", existing.own_kubectl_provider),
            ("Karpenter's nodes", uses_karpenter(settings)),
        )
        if needs
    ]
    if who:
        yield error(
            "GP-APP-31",
            "cluster.existing",
            f"{facts.name} authenticates only through the aws-auth ConfigMap (DescribeCluster "
            f"accessConfig.authenticationMode {CONFIG_MAP_ONLY}, cached in cdk.context.json), so "
            f"{' and '.join(who)} cannot be given access with an access entry: allow access "
            f"entries with `aws eks update-cluster-config --name {facts.name} --region "
            f"{settings.region} --access-config authenticationMode=API_AND_CONFIG_MAP` (the "
            "ConfigMap keeps working beside them; there is no way back), then reset the "
            "cluster's entry (`cdk context --reset`) and synthesize again",
        )


def _check_nodes(settings: AppSettings, facts: ClusterFacts) -> Iterator[Finding]:
    existing = settings.cluster.existing
    if existing is None:
        return
    if not existing.subnets_by_zone:
        yield error(
            "GP-APP-32",
            "cluster.existing.subnets_by_zone",
            f"every subnet of {facts.name} ({facts.vpc_id}) routes to an internet gateway "
            "(DescribeSubnets, DescribeRouteTables; cached in cdk.context.json), and GPU nodes "
            "go into private subnets only: set subnets_by_zone to private subnets of that VPC",
        )
    isolated = sorted(
        subnet
        for zone, subnets in existing.subnets_by_zone.items()
        for subnet in subnets
        if subnet in facts.isolated_subnets.get(zone, ())
    )
    if isolated:
        yield warning(
            "GP-APP-35",
            "cluster.existing.subnets_by_zone",
            f"{', '.join(isolated)} of {facts.name} route nowhere outside the VPC (no default "
            "route through a NAT or transit gateway: DescribeRouteTables, cached in "
            "cdk.context.json), so nodes and the stack's handlers there reach AWS only through "
            "VPC endpoints: the VPC needs interface endpoints for ecr.api, ecr.dkr, sts, eks, "
            'eks-auth and ec2, and the S3 gateway endpoint (EKS user guide, "Deploy private '
            'clusters with limited internet access"), or set subnets_by_zone to subnets '
            "behind a NAT gateway",
        )
    if settings.metrics.gpu == "cloudwatch" and CLOUDWATCH_ADDON in facts.addons:
        yield error(
            "GP-APP-34",
            "metrics.gpu",
            f"cloudwatch, and {facts.name} has the {CLOUDWATCH_ADDON} add-on already "
            "(ListAddons, cached in cdk.context.json): the stack would create it again, which "
            "EKS refuses, and the deploy rolls back: set metrics.gpu: none and keep yours",
        )
    controllers = uses_autoscaler(settings) or uses_karpenter(settings)
    if (
        controllers
        and existing.pod_identity_agent is False
        and (POD_IDENTITY_AGENT not in facts.addons)
    ):
        yield error(
            "GP-APP-33",
            "cluster.existing.pod_identity_agent",
            f"false, and {facts.name} has no {POD_IDENTITY_AGENT} add-on (ListAddons, cached "
            "in cdk.context.json), which hands Cluster Autoscaler and Karpenter their AWS "
            "credentials: remove the setting (the stack creates the add-on) or set it true; "
            "an agent installed without EKS add-ons (a Helm chart, a DaemonSet) is not seen "
            "by ListAddons: keep false only where one runs",
        )


def _check_kubectl_route(settings: AppSettings, facts: ClusterFacts) -> Iterator[Finding]:
    """The stack's kubectl handler calls the API from the cluster's VPC where the public
    endpoint is limited to some addresses (ClusterFacts.kubectl_in_vpc): without private
    access its calls leave through the VPC's NAT gateways, whose addresses must be allowed."""
    existing = settings.cluster.existing
    if existing is None or not existing.own_kubectl_provider:
        return
    if facts.public_access_limited and not facts.private_endpoint:
        yield warning(
            "GP-APP-37",
            "cluster.existing",
            f"{facts.name}'s API answers only {', '.join(facts.public_access_cidrs)} "
            "(publicAccessCidrs) and has no private endpoint, so the stack's kubectl handler "
            "runs in the cluster's subnets and calls it through their NAT gateways: allow "
            "their Elastic IP addresses in publicAccessCidrs, or turn private access on (`aws "
            f"eks update-cluster-config --name {facts.name} --region {settings.region} "
            "--resources-vpc-config endpointPrivateAccess=true`), else every chart times out",
        )
