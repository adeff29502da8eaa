"""ClusterVerifier: a role another account (a deployment pipeline's) assumes to run
`gpu-pool verify` on the cluster, with the EKS access that needs and nothing more.

What verify does on the cluster (gpu_pool/cli/verify.py, cli/inspect/): it creates, reads and
deletes its smoke pod (and reads the pod's log and events) in one namespace, and reads nodes,
DaemonSets, the autoscaler's Deployment and, on Karpenter pools, NodeClaims and NodePools
cluster-wide. Through AWS it reads the stack's outputs (the pool records), the cluster's
endpoint (update-kubeconfig), Auto Scaling activities and a reserved pool's reservation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from aws_cdk import ArnFormat, CfnOutput, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.nag.acknowledge import acknowledge_wildcard_resources

# The IAM path of every verifier role; only ClusterVerifier creates roles there.
VERIFIER_ROLE_PATH = "/gpu-pool-verify/"
# IAM's limit on a role name (the path not counted): IAM User Guide, "IAM object quotas".
ROLE_NAME_LIMIT = 64

# EKS access policies (EKS user guide, access-policy-permissions): AmazonEKSViewPolicy has no
# cluster-scoped resources (nodes, NodeClaims, NodePools), which verify must read, so the
# cluster-wide reader is AmazonEKSAdminViewPolicy (get, list, watch on every resource; Secrets
# too). Writes only where the smoke pod runs: AmazonEKSEditPolicy in that namespace alone.
CLUSTER_READER_POLICY = "AmazonEKSAdminViewPolicy"
NAMESPACE_WRITER_POLICY = "AmazonEKSEditPolicy"


@dataclass(frozen=True)
class Verifier:
    """Who verifies a GpuPoolStack's cluster from elsewhere: `principal` (e.g. the pipeline's
    account, iam.AccountPrincipal) may assume the verify role; the smoke pod runs in
    `namespace` (default: default, verify's own default)."""

    principal: iam.IPrincipal
    namespace: str = "default"


def verifier_role_name(stack_name: str) -> str:
    """The verify role's name in the stack's account, from the stack's name alone, so that a
    pipeline in another account can name the exact role its step may assume."""
    return bounded_role_name(f"{stack_name}-verify")


def bounded_role_name(name: str) -> str:
    """`name`, or when IAM's 64-character limit cuts it, its start and a hash of the whole:
    distinct names stay distinct, and the same name always maps to the same role."""
    if len(name) <= ROLE_NAME_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: ROLE_NAME_LIMIT - len(digest) - 1]}-{digest}"


class ClusterVerifier(Construct):
    """The verify role (named verifier_role_name(stack name) under VERIFIER_ROLE_PATH), its EKS
    access entry, and the role's ARN as the stack output `VerifierRoleArn` (what a pipeline's
    verify step reads)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster: eks.ICluster, verifier: Verifier
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=verifier.principal,
            path=VERIFIER_ROLE_PATH,
            role_name=verifier_role_name(stack.stack_name),
            description=f"gpu-pool verify on EKS cluster {cluster.cluster_name}",
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                # aws eks update-kubeconfig reads the endpoint and CA.
                actions=["eks:DescribeCluster"],
                resources=[cluster.cluster_arn],
            )
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                # gpu-pool verify --stack: the pool records in the stack's outputs.
                actions=["cloudformation:DescribeStacks"],
                resources=[
                    stack.format_arn(
                        service="cloudformation",
                        resource="stack",
                        resource_name=f"{stack.stack_name}/*",
                        arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                    )
                ],
            )
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                # Why a launch stalled, and a reserved pool's reservation: reads that the
                # Service Authorization Reference lists without resource types, so only "*".
                actions=[
                    "autoscaling:DescribeScalingActivities",
                    "ec2:DescribeCapacityReservations",
                ],
                resources=["*"],
            )
        )
        acknowledge_wildcard_resources(
            self.role.node.find_child("DefaultPolicy"),
            "gpu-pool verify's reads of Auto Scaling activities and capacity reservations: "
            "DescribeScalingActivities and DescribeCapacityReservations take no resource type",
        )
        self.access_entry = eks.AccessEntry(
            self,
            "AccessEntry",
            cluster=cluster,
            principal=self.role.role_arn,
            access_policies=[
                eks.AccessPolicy.from_access_policy_name(
                    CLUSTER_READER_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                ),
                eks.AccessPolicy.from_access_policy_name(
                    NAMESPACE_WRITER_POLICY,
                    access_scope_type=eks.AccessScopeType.NAMESPACE,
                    namespaces=[verifier.namespace],
                ),
            ],
        )
        self.role_arn_output = CfnOutput(
            stack,
            "VerifierRoleArn",
            description="the role gpu-pool verify assumes from the deployment pipeline",
            value=self.role.role_arn,
        )
