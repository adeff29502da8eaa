"""The rules about an existing cluster (`cluster.existing`) and what its lookup found
(plan/existing_cluster.py): whether it can be looked up at all, whether the stack's own kubectl
provider can be given access (EKS user guide, "Change authentication mode to use access
entries"), where its GPU nodes go, and the add-ons it has: the Pod Identity agent its
controllers need, and the CloudWatch add-on metrics.gpu: cloudwatch would create again.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.checks.app import uses_autoscaler, uses_karpenter
from gpu_pool.model.findings import Finding, error
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
    if facts is None:
        return list(_check_lookup_possible(settings))
    if facts.placeholder:
        return []
    return [*_check_access_entries(settings, facts), *_check_nodes(settings, facts)]


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
            "credentials: remove the setting (the stack creates the add-on) or set it true",
        )
