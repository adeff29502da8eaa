"""Writes Cluster Autoscaler tags onto a managed node group's Auto Scaling group.

Tags set on AWS::EKS::Nodegroup do not propagate to its ASG (../shared/FACTS.md), so a custom
resource per node group writes them. Its handler (asg_tag_handler/index.py) runs behind a
`custom_resources.Provider`, not an AwsCustomResource, for two reasons:
- it must delete the tags a previous deploy wrote and this one does not (a removed label or taint
  left on the ASG stays in CA's zero-node template), and only a Provider handler sees
  OldResourceProperties;
- every AwsCustomResource in a stack runs as one singleton Lambda whose role is the FIRST such
  resource's: a user's own AwsCustomResource created before the pool would take the tag writer's
  permissions away. This Lambda and its role belong to gpu-pool alone.

One handler per stack; each cluster whose pools use it adds statements scoped to that cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

from aws_cdk import ArnFormat, CustomResource, Duration, Names, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from gpu_pool.nag import acknowledge, acknowledge_wildcard_resources

HANDLER_DIR = Path(__file__).resolve().parent / "asg_tag_handler"
RESOURCE_TYPE = "Custom::GpuPoolAsgTags"
_WRITER_ID = "GpuPoolAsgTagWriter"


class AsgTagWriter(Construct):
    """The stack's tag writer: the handler Lambda, its role, and the Provider in front of it."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="gpu-pool: writes Cluster Autoscaler tags on GPU node group ASGs",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(
                    "service-role/AWSLambdaBasicExecutionRole"
                )
            ],
        )
        handler = lambda_.Function(
            self,
            "Handler",
            description="gpu-pool: keeps CA node-template tags on node group ASGs current",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.on_event",
            code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            role=self.role,
            # A node group has at most a few dozen tags: a handful of API calls.
            timeout=Duration.minutes(2),
            log_group=logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_MONTH),
        )
        self.provider = cr.Provider(self, "Provider", on_event_handler=handler)
        _acknowledge_provider_framework(self.provider)

    @classmethod
    def of(cls, scope: Construct, cluster: eks.ICluster) -> AsgTagWriter:
        """The stack's writer, created on first use, allowed to tag `cluster`'s ASGs."""
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(_WRITER_ID)
        writer = cast(AsgTagWriter, existing) if existing is not None else cls(stack, _WRITER_ID)
        grant_id = f"Grants{Names.node_unique_id(cluster.node)}"
        if writer.role.node.try_find_child(grant_id) is None:
            grants = iam.Policy(
                writer.role,
                grant_id,
                statements=tag_writer_statements(stack, cluster.cluster_name),
            )
            writer.role.attach_inline_policy(grants)
            acknowledge_wildcard_resources(
                grants,
                "Node group ARNs are scoped to this cluster's prefix (their names are "
                "generated); ASG ARNs carry a random id, so tagging is scoped by the "
                "eks:cluster-name tag condition; DescribeAutoScalingGroups has no resource "
                "level permissions",
            )
        return writer


def tag_writer_statements(stack: Stack, cluster_name: str) -> list[iam.PolicyStatement]:
    """Describe only this cluster's node groups; tag only ASGs EKS marked as this cluster's."""
    return [
        iam.PolicyStatement(
            actions=["eks:DescribeNodegroup"],
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


def _acknowledge_provider_framework(provider: cr.Provider) -> None:
    """Findings inside aws-cdk-lib's provider framework, which this project does not write."""
    framework = provider.node.find_child("framework-onEvent")
    acknowledge(
        framework,
        "AwsSolutions-L1",
        "The provider framework's Lambda runtime is chosen by aws-cdk-lib (pinned in "
        "requirements.txt); upgrading aws-cdk-lib moves it",
    )
    acknowledge_wildcard_resources(
        framework.node.find_child("ServiceRole").node.find_child("DefaultPolicy"),
        "aws-cdk-lib's provider framework invokes its own handler function and its versions",
    )


class AsgTags(Construct):
    """Cluster Autoscaler tags on the ASG behind one managed node group.

    :ivar asg_name: the name of the ASG EKS made for the node group (a deploy-time token).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        nodegroup: eks.CfnNodegroup,
        tags: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        writer = AsgTagWriter.of(self, cluster)
        resource = CustomResource(
            self,
            "Resource",
            service_token=writer.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={
                "ClusterName": cluster.cluster_name,
                # GetAtt NodegroupName is the bare name DescribeNodegroup takes; Ref would be
                # cluster/nodegroup.
                "NodegroupName": nodegroup.attr_nodegroup_name,
                # A list, not a map: the discovery tag's key holds the cluster name, a token.
                "Tags": [{"Key": key, "Value": value} for key, value in sorted(tags.items())],
            },
        )
        self.asg_name = resource.get_att_string("AsgName")
