"""EKS Pod Identity: how the controllers gpu-pool installs get their AWS credentials.

A role that pods.eks.amazonaws.com may assume (with session tags), an association tying it to
the chart's service account, and the eks-pod-identity-agent add-on that hands the credentials
out, once per cluster. No OIDC provider is needed.
"""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from gpu_pool.cdk.registry import cluster_scope, owned_addon

# The construct id aws-cdk-lib gives the add-on it creates under a cluster
# (aws-cdk-lib aws-eks-v2/lib/cluster.ts, Cluster.eksPodIdentityAgent), and the one gpu-pool
# gives it beside an imported cluster's registry.
CLUSTER_AGENT_ID = "EksPodIdentityAgentAddon"
AGENT_ID = "PodIdentityAgent"


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


def pod_identity_agent(cluster: eks.ICluster, install: bool | None) -> IConstruct | None:
    """The cluster's eks-pod-identity-agent add-on, for a chart to depend on.

    One per cluster, whichever controller asks first, with a logical id that does not depend on
    it: for an `eks.Cluster` the cluster's own (`eks_pod_identity_agent`, which aws-cdk-lib's
    Pod Identity service accounts use too), for an imported cluster one beside its registry
    (registry.cluster_scope). `install` None: add it to a cluster created here, not to an
    imported one (whose owner installs it); False: add none. None if there is none.
    """
    if isinstance(cluster, eks.Cluster):
        added = cluster.node.try_find_child(CLUSTER_AGENT_ID)
        return added if added is not None or install is False else cluster.eks_pod_identity_agent
    scope = cluster_scope(cluster)
    added = scope.node.try_find_child(AGENT_ID)
    if added is not None or not install:
        return added
    return owned_addon(
        eks.Addon(scope, AGENT_ID, cluster=cluster, addon_name="eks-pod-identity-agent")
    )
