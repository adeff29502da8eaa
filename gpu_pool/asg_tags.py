"""Writes Cluster Autoscaler tags onto a managed node group's Auto Scaling group.

Tags set on AWS::EKS::Nodegroup do not propagate to its ASG (../shared/FACTS.md), so a pair of
AwsCustomResources does it: EKS DescribeNodegroup yields the ASG name, AutoScaling
CreateOrUpdateTags writes the tags. Both re-run when their parameters change, which happens when
the node group is replaced (new name, new ASG) or its labels, taints or GPU count change.
Neither has an on-delete call, so deleting the stack cannot fail on an ASG that is already gone
(the tags disappear with it).

All AwsCustomResources in a stack share one Lambda and so one role; it is created here, once per
stack, and scoped to the clusters whose pools add statements to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from aws_cdk import ArnFormat, Names, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct

from gpu_pool.nag import acknowledge_wildcard_resources

ASG_NAME_PATH = "nodegroup.resources.autoScalingGroups.0.name"
# CreateOrUpdateTags takes at most 25 tags per call (EC2 Auto Scaling quotas).
TAGS_PER_CALL = 25
_ROLE_ID = "GpuPoolAsgTagWriterRole"


def tag_writer_role(scope: Construct, cluster: eks.ICluster) -> iam.Role:
    """The stack's AwsCustomResource role, allowed to tag this cluster's node group ASGs."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(_ROLE_ID)
    role = (
        cast(iam.Role, existing)
        if existing is not None
        else iam.Role(
            stack,
            _ROLE_ID,
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="gpu-pool: writes Cluster Autoscaler tags on GPU node group ASGs",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(
                    "service-role/AWSLambdaBasicExecutionRole"
                )
            ],
        )
    )
    grant_id = f"Grants{Names.node_unique_id(cluster.node)}"
    if role.node.try_find_child(grant_id) is None:
        grants = iam.Policy(
            role, grant_id, statements=tag_writer_statements(stack, cluster.cluster_name)
        )
        role.attach_inline_policy(grants)
        acknowledge_wildcard_resources(
            grants,
            "Node group ARNs are scoped to this cluster's prefix (their names are generated); ASG "
            "ARNs carry a random id, so tagging is scoped by the eks:cluster-name tag condition",
        )
    return role


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
            actions=["autoscaling:CreateOrUpdateTags"],
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
    ]


class AsgTags(Construct):
    """Cluster Autoscaler tags on the ASG behind one managed node group."""

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
        cluster_name = cluster.cluster_name
        role = tag_writer_role(self, cluster)
        describe = cr.AwsSdkCall(
            service="EKS",
            action="DescribeNodegroup",
            parameters={
                "clusterName": cluster_name,
                "nodegroupName": nodegroup.attr_nodegroup_name,
            },
            physical_resource_id=cr.PhysicalResourceId.from_response(ASG_NAME_PATH),
            # The full response exceeds the 4 KB a custom resource may return.
            output_paths=[ASG_NAME_PATH],
        )
        asg_lookup = cr.AwsCustomResource(
            self,
            "AsgName",
            on_create=describe,
            on_update=describe,
            role=role,
            install_latest_aws_sdk=False,
        )
        # The ASG EKS made for the node group (a token resolved at deploy).
        self.asg_name = asg_name = asg_lookup.get_response_field(ASG_NAME_PATH)
        items = sorted(tags.items())
        for index in range(0, len(items), TAGS_PER_CALL):
            chunk = items[index : index + TAGS_PER_CALL]
            call = cr.AwsSdkCall(
                service="AutoScaling",
                action="CreateOrUpdateTags",
                parameters={
                    "Tags": [
                        {
                            "ResourceId": asg_name,
                            "ResourceType": "auto-scaling-group",
                            "Key": key,
                            "Value": value,
                            "PropagateAtLaunch": False,
                        }
                        for key, value in chunk
                    ]
                },
                physical_resource_id=cr.PhysicalResourceId.of(f"{asg_name}-tags-{index}"),
            )
            cr.AwsCustomResource(
                self,
                "Tags" if index == 0 else f"Tags{index // TAGS_PER_CALL + 1}",
                on_create=call,
                on_update=call,
                role=role,
                install_latest_aws_sdk=False,
            )
