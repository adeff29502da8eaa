"""The Lambda behind gpu-pool's per-node-group custom resources, one per stack.

Its handler (handler/index.py) runs behind a `custom_resources.Provider`, not an
AwsCustomResource, for two reasons:
- the ASG tags must lose what a previous deploy wrote and this one does not (a removed label or
  taint left on the ASG stays in CA's zero-node template), and only a Provider handler sees
  OldResourceProperties;
- every AwsCustomResource in a stack runs as one singleton Lambda whose role is the FIRST such
  resource's: a user's own AwsCustomResource created before the pool would take this Lambda's
  permissions away. This Lambda and its role belong to gpu-pool alone.

Each cluster whose pools use it adds statements scoped to that cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from aws_cdk import ArnFormat, CustomResource, Duration, Names, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from gpu_pool.cdk.nag.acknowledge import (
    acknowledge_managed_policies,
    acknowledge_provider_framework,
    acknowledge_wildcard_resources,
)
from gpu_pool.cdk.registry import literal_cluster_name

HANDLER_DIR = Path(__file__).resolve().parent / "handler"
_PROVIDER_ID = "GpuPoolNodegroupHandler"


class NodegroupHandler(Construct):
    """The stack's handler of per-node-group resources: its Lambda, role, and Provider."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="gpu-pool: node group scaling and Cluster Autoscaler tags on their ASGs",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(
                    "service-role/AWSLambdaBasicExecutionRole"
                )
            ],
        )
        handler = lambda_.Function(
            self,
            "Handler",
            description="gpu-pool: node group scaling bounds and CA node-template tags",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.on_event",
            code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            role=self.role,
            # A node group has at most a few dozen tags: a handful of API calls.
            timeout=Duration.minutes(2),
            log_group=logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_MONTH),
        )
        self.provider = cr.Provider(self, "Provider", on_event_handler=handler)
        framework = self.provider.node.find_child("framework-onEvent")
        acknowledge_provider_framework(framework, framework, "The provider framework")
        acknowledge_managed_policies(self)

    @classmethod
    def of_stack(cls, scope: Construct) -> NodegroupHandler:
        """The stack's handler, created on first use, with no grants of a cluster (the Auto
        Mode guard adds its own)."""
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(_PROVIDER_ID)
        return (
            cast(NodegroupHandler, existing) if existing is not None else cls(stack, _PROVIDER_ID)
        )

    @classmethod
    def of(cls, scope: Construct, cluster: eks.ICluster) -> NodegroupHandler:
        """The stack's handler, created on first use, allowed to act on `cluster`'s groups."""
        stack = Stack.of(scope)
        writer = cls.of_stack(stack)
        grant_id = f"Grants{Names.node_unique_id(cluster.node)}"
        if writer.role.node.try_find_child(grant_id) is None:
            # The name as text where the cluster was given one: a Ref would make the handler
            # wait for the cluster, and the cluster waits for its Auto Mode guard, which this
            # handler serves (cdk/auto_mode/guard.py).
            name = literal_cluster_name(cluster) or cluster.cluster_name
            grants = iam.Policy(writer.role, grant_id, statements=handler_statements(stack, name))
            writer.role.attach_inline_policy(grants)
            acknowledge_wildcard_resources(
                grants,
                "Node group ARNs are scoped to this cluster's prefix (their names are "
                "generated); ASG ARNs carry a random id, so tagging is scoped by the "
                "eks:cluster-name tag condition; DescribeAutoScalingGroups has no resource "
                "level permissions",
            )
        return writer


def handler_statements(stack: Stack, cluster_name: str) -> list[iam.PolicyStatement]:
    """Describe and scale only this cluster's node groups; tag only ASGs EKS marked as its."""
    return [
        iam.PolicyStatement(
            actions=["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"],
            resources=[
                stack.format_arn(
                    service="eks",
                    resource="nodegroup",
                    resource_name=f"{cluster_name}/*/*",
                )
            ],
        ),
        iam.PolicyStatement(
            actions=["autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags"],
            resources=[
                stack.format_arn(
                    service="autoscaling",
                    resource="autoScalingGroup",
                    # ...:autoScalingGroup:<uuid>:autoScalingGroupName/<name>; the tag
                    # condition, not the name, is what ties the ASG to this cluster.
                    resource_name="*",
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            ],
            conditions={"StringEquals": {"aws:ResourceTag/eks:cluster-name": cluster_name}},
        ),
        # Read-only, and the action supports no resource-level permissions.
        iam.PolicyStatement(actions=["autoscaling:DescribeAutoScalingGroups"], resources=["*"]),
    ]


def nodegroup_resource(
    scope: Construct,
    *,
    cluster: eks.ICluster,
    nodegroup: eks.CfnNodegroup,
    resource_type: str,
    properties: Mapping[str, Any],
) -> CustomResource:
    """A custom resource of `resource_type` for one node group, handled by the stack's
    NodegroupHandler: ClusterName and NodegroupName (the bare name: GetAtt NodegroupName,
    which DescribeNodegroup takes; Ref would be cluster/nodegroup) plus `properties`."""
    return CustomResource(
        scope,
        "Resource",
        service_token=NodegroupHandler.of(scope, cluster).provider.service_token,
        resource_type=resource_type,
        properties={
            "ClusterName": cluster.cluster_name,
            "NodegroupName": nodegroup.attr_nodegroup_name,
            **properties,
        },
    )
