"""ClusterVerifier: a role another account (a deployment pipeline's) assumes to run
`gpu-pool verify` on the cluster, with the EKS access that needs and nothing more.

What verify does on the cluster (gpu_pool/cli/commands/verify/, cli/inspect/): it creates,
reads and deletes its smoke objects (and reads the pods' logs and events) in one namespace, and
reads cluster-wide what gpu_pool/model/verify_rights.py lists (the ClusterRole is rendered from it).
Through AWS it reads the stack's outputs (the pool records), the cluster's endpoint
(update-kubeconfig), Auto Scaling activities and a reserved pool's reservation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, CfnOutput, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.nag.acknowledge import acknowledge_wildcard_resources
from gpu_pool.model.verify_rights import READ_VERBS, VERIFY_READS

# The IAM path of every verifier role; only ClusterVerifier creates roles there.
VERIFIER_ROLE_PATH = "/gpu-pool-verify/"
# IAM's limit on a role name (the path not counted): IAM User Guide, "IAM object quotas".
ROLE_NAME_LIMIT = 64

# Writes only where the smoke pod runs: the EKS access policy AmazonEKSEditPolicy in that
# namespace alone (EKS user guide, access-policy-permissions). The cluster-wide reads are a
# ClusterRole of their own (VERIFY_READS): no EKS access policy reads nodes without reading
# every resource, Secrets included (AmazonEKSAdminViewPolicy).
NAMESPACE_WRITER_POLICY = "AmazonEKSEditPolicy"
# The DRA smoke objects verify creates and deletes in its namespace (cli/smoke_test.py): the EKS
# edit policy covers pods, but is not documented to cover resource.k8s.io objects, and a CRD's
# objects (the driver's ComputeDomains; its chart aggregates no RBAC to `edit`) never.
VERIFY_WRITES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("resource.k8s.io", ("resourceclaimtemplates",)),
    ("resource.nvidia.com", ("computedomains",)),
)
WRITE_VERBS = ("create", "get", "list", "watch", "delete")
# Namespaces every cluster has and Kubernetes never deletes (the NamespaceLifecycle admission
# plugin's immortal namespaces, and kube-node-lease): any other smoke namespace is created with
# the verify role's Role, or applying the Role would fail the deploy (namespace not found).
CLUSTER_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


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


def verify_group(stack_name: str) -> str:
    """The Kubernetes group (and the name of its ClusterRole and binding) of a stack's verify
    role: one per stack, so that two stacks on one cluster do not apply the same objects."""
    return f"gpu-pool-verify-{stack_name.lower()}"


def verify_reads_manifest(stack_name: str) -> list[dict[str, Any]]:
    """The ClusterRole of verify's cluster-wide reads, bound to the stack's verify group."""
    name = verify_group(stack_name)
    rules = [
        {"apiGroups": [group], "resources": list(resources), "verbs": list(READ_VERBS)}
        for group, resources in VERIFY_READS
    ]
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    subject = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": role_ref,
            "subjects": [subject],
        },
    ]


def verify_writes_manifest(stack_name: str, namespace: str) -> list[dict[str, Any]]:
    """A Role in the smoke namespace for the DRA smoke objects verify creates, bound to the
    stack's verify group; first the namespace itself unless every cluster has it (it is then
    the stack's, and goes with it: a namespace of its own, not one that holds other work)."""
    name = verify_group(stack_name)
    rules = [
        {"apiGroups": [group], "resources": list(resources), "verbs": list(WRITE_VERBS)}
        for group, resources in VERIFY_WRITES
    ]
    created = (
        []
        if namespace in CLUSTER_NAMESPACES
        else [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    )
    return [
        *created,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}],
        },
    ]


class ClusterVerifier(Construct):
    """The verify role (named verifier_role_name(stack name) under VERIFIER_ROLE_PATH), its EKS
    access entry (in the group verify_group(stack name), which a ClusterRole of verify's
    cluster-wide reads and a Role of its DRA smoke objects are bound to, applied through the
    cluster's kubectl provider), and the
    role's ARN as the stack output `VerifierRoleArn` (what a pipeline's verify step reads)."""

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
                    NAMESPACE_WRITER_POLICY,
                    access_scope_type=eks.AccessScopeType.NAMESPACE,
                    namespaces=[verifier.namespace],
                ),
            ],
        )
        # The aws_eks_v2 AccessEntry takes no Kubernetes groups: its CloudFormation resource does.
        entry = self.access_entry.node.default_child
        assert isinstance(entry, eks.CfnAccessEntry)
        entry.kubernetes_groups = [verify_group(stack.stack_name)]
        self.reads = eks.KubernetesManifest(
            self, "Reads", cluster=cluster, manifest=verify_reads_manifest(stack.stack_name)
        )
        self.writes = eks.KubernetesManifest(
            self,
            "Writes",
            cluster=cluster,
            manifest=verify_writes_manifest(stack.stack_name, verifier.namespace),
        )
        self.role_arn_output = CfnOutput(
            stack,
            "VerifierRoleArn",
            description="the role gpu-pool verify assumes from the deployment pipeline",
            value=self.role.role_arn,
        )
