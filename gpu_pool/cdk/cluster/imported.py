"""An existing cluster (`cluster.existing`), imported by name: with the kubectl provider its
settings name, or with one of the stack's own, given access by an EKS access entry.

aws_eks_v2's imported cluster takes a kubectl provider but never creates one (aws-cdk-lib 2.275
aws-eks-v2/lib/cluster.ts: ImportedCluster reads only `kubectlProvider`), and a KubectlProvider
needs a cluster to describe: the provider is built for a first import (its ARN, and its VPC where
the API is private-only), the cluster the pools use is a second one holding the provider.
"""

from __future__ import annotations

from aws_cdk import Annotations, CfnResource, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from gpu_pool.cdk.cluster.eks import acknowledge_kubectl_provider, kubectl_layer
from gpu_pool.cdk.nag.acknowledge import acknowledge_managed_policies
from gpu_pool.plan.existing_cluster import ClusterFacts
from gpu_pool.settings import ClusterSettings, ConfigError, ExistingClusterSettings

# EKS access policy that lets the kubectl provider apply what the pools bring: CRDs,
# ClusterRoles, namespaces and NodePools are cluster-scoped, so no namespace-scoped policy can
# apply them (EKS user guide, "Associate access policies with access entries":
# AmazonEKSClusterAdminPolicy, access scope cluster). aws_eks_v2 gives its own clusters' kubectl
# role the same (Cluster.grantClusterAdmin).
KUBECTL_ACCESS_POLICY = "AmazonEKSClusterAdminPolicy"
# The CloudFormation types of aws_eks_v2's kubectl resources (manifests, charts, patches,
# object values): each waits for the provider's access.
_KUBECTL_RESOURCE = "Custom::AWSCDK-EKS-"
# aws-cdk-lib warns, once per subnet imported without a route table, that reading its route
# table gives nothing (aws-ec2 vpc.ts, Subnet.fromSubnetAttributes). Nothing here reads it: node
# groups and the kubectl handler take subnet ids alone.
_NO_ROUTE_TABLE = "@aws-cdk/aws-ec2:noSubnetRouteTableId"
_NO_ROUTE_TABLE_REASON = "node groups and the kubectl handler take the subnet ids alone"


def imported_cluster(
    stack: Stack,
    settings: ClusterSettings,
    existing: ExistingClusterSettings,
    facts: ClusterFacts | None,
) -> tuple[eks.ICluster, list[ec2.ISubnet]]:
    """The cluster, imported by name with its kubectl provider, and the subnets of
    `existing.subnets_by_zone` (looked-up facts filled in), by zone. `facts`: the cluster as
    looked up, which the stack's own provider needs."""
    subnets = [
        ec2.Subnet.from_subnet_attributes(
            stack, f"Subnet-{subnet_id}", subnet_id=subnet_id, availability_zone=zone
        )
        for zone, subnet_ids in existing.subnets_by_zone.items()
        for subnet_id in subnet_ids
    ]
    for subnet in subnets:
        Annotations.of(subnet).acknowledge_warning(_NO_ROUTE_TABLE, _NO_ROUTE_TABLE_REASON)
    if existing.kubectl_provider_service_token and existing.kubectl_provider_role_arn:
        provider = eks.KubectlProvider.from_kubectl_provider_attributes(
            stack,
            "KubectlProvider",
            service_token=existing.kubectl_provider_service_token,
            role=iam.Role.from_role_arn(
                stack, "KubectlRole", existing.kubectl_provider_role_arn, mutable=False
            ),
        )
        cluster = eks.Cluster.from_cluster_attributes(
            stack, "Cluster", cluster_name=settings.name, kubectl_provider=provider
        )
        return cluster, subnets
    # GP-APP-30 has refused settings that need a lookup no stack can ask.
    assert facts is not None
    return _with_own_provider(stack, settings, facts), subnets


def _with_own_provider(
    stack: Stack, settings: ClusterSettings, facts: ClusterFacts
) -> eks.ICluster:
    """The cluster with a kubectl provider of the stack's own. Where the endpoint answers inside
    the cluster's VPC, or only some public addresses (ClusterFacts.kubectl_in_vpc), the handler
    runs in the cluster's private subnets, in the cluster security group, which EKS lets reach
    the API."""
    in_vpc = facts.kubectl_in_vpc
    # The subnets and security group the settings hold (a hand-set value, else the lookup's).
    existing = settings.existing or ExistingClusterSettings()
    subnets = {z: ids for z, ids in existing.subnets_by_zone.items() if ids}
    security_group = existing.cluster_security_group_id or facts.cluster_security_group_id
    if in_vpc and not (subnets and security_group):
        why = "is private only" if facts.private_only else "answers inside its VPC"
        if not facts.private_endpoint:
            why = "answers only publicAccessCidrs"
        raise ConfigError(
            f"cluster.existing: {settings.name}'s endpoint {why}, so the stack's "
            "kubectl handler runs in its VPC, and DescribeCluster named no private subnet or "
            "no cluster security group for it: set cluster.existing.subnets_by_zone and "
            "cluster.existing.cluster_security_group_id"
        )
    zones = sorted(subnets)
    target = eks.Cluster.from_cluster_attributes(
        stack,
        "KubectlTarget",
        cluster_name=settings.name,
        vpc=ec2.Vpc.from_vpc_attributes(
            stack,
            "ClusterVpc",
            vpc_id=facts.vpc_id,
            availability_zones=zones,
            # One subnet a zone: Vpc.fromVpcAttributes takes as many per zone.
            private_subnet_ids=[subnets[z][0] for z in zones],
        )
        if in_vpc
        else None,
        cluster_security_group_id=security_group if in_vpc else None,
    )
    if in_vpc:
        for subnet in target.vpc.private_subnets:
            Annotations.of(subnet).acknowledge_warning(_NO_ROUTE_TABLE, _NO_ROUTE_TABLE_REASON)
    provider = eks.KubectlProvider(
        stack,
        "KubectlProvider",
        cluster=target,
        kubectl_layer=kubectl_layer(stack, settings),
        private_subnets=target.vpc.private_subnets if in_vpc else None,
    )
    acknowledge_kubectl_provider(provider)
    acknowledge_managed_policies(provider)
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name=settings.name, kubectl_provider=provider
    )
    # A KubectlProvider always has its handler's role (typed optional for imported providers).
    role = provider.role
    assert role is not None
    eks.AccessEntry(
        stack,
        "KubectlAccess",
        cluster=cluster,
        principal=role.role_arn,
        access_policies=[
            eks.AccessPolicy.from_access_policy_name(
                KUBECTL_ACCESS_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
            )
        ],
    )
    return cluster


def wait_for_kubectl_access(stack: Stack) -> None:
    """Every kubectl resource of the stack after the provider's access entry, so that none runs
    before its role may, and none is deleted after its role lost access. aws_eks_v2 orders them
    for the clusters it creates only (its kubectl-ready barrier). Called once the stack is
    built; nothing without the stack's own provider."""
    access = stack.node.try_find_child("KubectlAccess")
    if access is None:
        return
    for construct in stack.node.find_all():
        if isinstance(construct, CfnResource) and construct.cfn_resource_type.startswith(
            _KUBECTL_RESOURCE
        ):
            construct.node.add_dependency(access)
