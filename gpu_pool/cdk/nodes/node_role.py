"""The IAM role GPU nodes run as, whichever provisioner launches them."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.nag.acknowledge import acknowledge_managed_policies

# The managed policies EKS documents for a node role: join the cluster, attach pod ENIs, pull
# add-on images. Nothing more: pods get their own credentials through Pod Identity.
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
)


def node_role(scope: Construct, construct_id: str, description: str | None = None) -> iam.Role:
    """The role, with cdk-nag's IAM4 findings on its managed policies acknowledged."""
    role = iam.Role(
        scope,
        construct_id,
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        description=description,
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in NODE_POLICIES],
    )
    acknowledge_managed_policies(role)
    return role
