"""What the cluster role of an Auto Mode cluster this app creates needs for gpu-pool's
NodeClasses, beyond the managed policies aws-cdk-lib attaches: Auto Mode launches the nodes,
tags them and encrypts their volumes as that role (model/auto_mode_api.py has the statements
and their sources). One policy per cluster, beside the cluster's pool registry; a cluster or
role the app imports is left alone (checks/auto_mode.py says what it needs)."""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from gpu_pool.cdk.nag.acknowledge import acknowledge
from gpu_pool.cdk.registry import EksCluster, as_icluster, cluster_scope
from gpu_pool.model.auto_mode_api import node_class_tags_statement, volume_key_statements

POLICY_ID = "AutoModeClusterRolePolicy"


def created_cluster_role(cluster: EksCluster) -> iam.Role | None:
    """The cluster's role where this app creates it (an eks.Cluster's own role); None for an
    imported cluster, or a role the cluster was given from elsewhere."""
    role = cluster.role if isinstance(cluster, eks.Cluster) else None
    return role if isinstance(role, iam.Role) else None


def cluster_role_policy(cluster: EksCluster, role: iam.Role) -> iam.Policy:
    """The cluster role's gpu-pool policy, made when the first pool needs it."""
    scope = cluster_scope(as_icluster(cluster))
    found = scope.node.try_find_child(POLICY_ID)
    return found if isinstance(found, iam.Policy) else iam.Policy(scope, POLICY_ID, roles=[role])


def allow_node_class_tags(policy: iam.Policy) -> None:
    """Let Auto Mode launch nodes with the NodeClasses' own tags (added once however many
    pools ask: the policy document drops a repeated statement)."""
    policy.add_statements(iam.PolicyStatement.from_json(node_class_tags_statement()))
    acknowledge(
        policy,
        "AwsSolutions-IAM5[Resource::*]",
        "the EKS user guide's statement for NodeClass tags: EC2 checks the request tags on every "
        "resource a launch creates; the conditions require the cluster's own name tag (EKS's "
        "session tag) and Auto Mode's NodeClass and NodePool tags",
    )


def allow_volume_key(policy: iam.Policy, key_arn: str) -> None:
    """Let Auto Mode encrypt the nodes' volumes with the key: enough where the key policy
    delegates to IAM (a key's default policy does)."""
    for statement in volume_key_statements(None, key_arn):
        policy.add_statements(iam.PolicyStatement.from_json(statement))
    for action in ("kms:ReEncrypt*", "kms:GenerateDataKey*"):
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Action::{action}]",
            "the EKS user guide's key policy for Auto Mode names these action families (EBS "
            "re-encrypts and makes data keys for the volumes), on the one key only",
        )
