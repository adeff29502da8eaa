"""EKS Pod Identity: how the controllers gpu-pool installs get their AWS credentials.

A role that pods.eks.amazonaws.com may assume (with session tags), an association tying it to
the chart's service account, and the eks-pod-identity-agent add-on that hands the credentials
out, once per cluster. No OIDC provider is needed.
"""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.registry import ClusterPools


def pod_identity_role(
    scope: Construct,
    role_id: str,
    *,
    cluster: eks.ICluster,
    namespace: str,
    service_account: str,
    description: str,
) -> tuple[iam.Role, eks.CfnPodIdentityAssociation]:
    """The role for `namespace/service_account`, and the association (construct id
    `PodIdentity`) a chart must depend on: credentials must exist before its pod starts, or it
    crash-loops on the node role."""
    role = iam.Role(
        scope,
        role_id,
        assumed_by=iam.SessionTagsPrincipal(iam.ServicePrincipal("pods.eks.amazonaws.com")),
        description=description,
    )
    association = eks.CfnPodIdentityAssociation(
        scope,
        "PodIdentity",
        cluster_name=cluster.cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.role_arn,
    )
    return role, association


def pod_identity_agent(
    scope: Construct, cluster: eks.ICluster, install: bool | None
) -> eks.Addon | None:
    """The cluster's eks-pod-identity-agent add-on for a chart to depend on: the one already
    added in this app, else a new one under `scope`. `install` None: add it to a cluster
    created here, not to an imported one (whose owner installs it). None if not added."""
    pools = ClusterPools.of(cluster)
    if pools.pod_identity_agent is None and (
        isinstance(cluster, eks.Cluster) if install is None else install
    ):
        pools.pod_identity_agent = eks.Addon(
            scope, "PodIdentityAgent", cluster=cluster, addon_name="eks-pod-identity-agent"
        )
    return pools.pod_identity_agent
