"""What an existing cluster is (`cluster.existing`), looked up once and cached in cdk.context.json
as the Region's facts are (lookups/region.py): the project's CDK CLI plugin answers provider
`plugin` with pluginName `gpu-pool-eks-cluster` (gpu_pool/lookups/eks_cluster.py: DescribeCluster,
ListAddons and DescribeAddon, DescribeSubnets and DescribeRouteTables).

Asked for an environment-bound stack whose settings leave a fact to it (no `subnets_by_zone`, or
no kubectl provider of one's own: plan/existing_cluster.py needs_lookup), or with the region
lookups on. Until an answer is cached the stack is built on placeholders (placeholder_facts),
which the synth names as the unchecked fact GP-REGION-08 and the deploy guard holds.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aws_cdk import Stack, Token
from constructs import Construct

from gpu_pool.cdk.lookups.context import looked_up
from gpu_pool.cdk.lookups.region import (
    PLUGIN_PROVIDER,
    plugin_unaskable,
    region_lookups,
    unchecked_fact,
)
from gpu_pool.model.findings import Finding
from gpu_pool.plan.existing_cluster import (
    CLUSTER_PLUGIN,
    ClusterFacts,
    needs_lookup,
    placeholder_facts,
)
from gpu_pool.settings import AppSettings, ConfigError


def existing_cluster_facts(scope: Construct, settings: AppSettings) -> ClusterFacts | None:
    """The existing cluster as cached, its placeholders while it is unchecked; None for a new
    cluster, an environment-agnostic stack (nothing can be looked up) and settings that need
    no lookup without the region lookups on."""
    existing = settings.cluster.existing
    stack = Stack.of(scope)
    if existing is None or Token.is_unresolved(stack.account) or Token.is_unresolved(stack.region):
        return None
    if not (needs_lookup(existing) or region_lookups(scope)):
        return None
    props = {"pluginName": CLUSTER_PLUGIN, "clusterName": settings.cluster.name}
    answer = looked_up(
        scope,
        provider=PLUGIN_PROVIDER,
        props=props,
        dummy={},
        unchecked=partial(_cluster_unchecked, stack, settings),
        cannot_ask=plugin_unaskable(),
    )
    if answer is None:
        return placeholder_facts(settings)
    return _read(answer, settings.cluster.name, stack.stack_name)


def _read(answer: Any, name: str, stack_name: str) -> ClusterFacts:
    """The cached answer as the stack reads it; an entry written by hand that is not one is a
    ConfigError."""
    try:
        return ClusterFacts.from_answer(answer, stack_name)
    except (KeyError, TypeError, AttributeError) as err:
        raise ConfigError(
            f"cdk.context.json: the entry of the EKS cluster lookup of {name} is not its "
            f"answer (no {err}): remove it (`cdk context --reset` its key) and synthesize with "
            "credentials to look the cluster up again"
        ) from None


def _cluster_unchecked(stack: Stack, settings: AppSettings, why: str) -> Finding:
    """GP-REGION-08 for the existing cluster: the template is built on placeholders."""
    name = settings.cluster.name
    fact = (
        f"the EKS cluster {name} of account {stack.account} in {stack.region} (its Kubernetes "
        "version, private subnets, cluster security group, endpoint, authentication mode and "
        "add-ons)"
    )
    existing = settings.cluster.existing
    subnets = (
        "the subnets of cluster.existing.subnets_by_zone"
        if existing is not None and existing.subnets_by_zone
        else "subnets no deploy finds"
    )
    then = (
        "The stack is built on placeholders: node groups of Kubernetes "
        f"{settings.cluster.kubernetes_version} (cluster.kubernetes_version) in {subnets}"
    )
    command = f"aws eks describe-cluster --name {name} --region {stack.region}"
    return unchecked_fact(stack, "cluster.existing", fact, command, why, then)
