"""The Karpenter controller's permissions.

The statements are upstream's, grouped as its getting-started CloudFormation groups them into
managed policies (website/content/en/v1.15/reference/cloudformation.md, which describes the
v1.15.0 getting-started cloudformation.yaml statement by statement): one policy each for node
lifecycle, IAM integration, EKS integration, interruption, zonal shift and resource discovery
(together about 6.8k characters, over the 6,144 one managed policy holds). Every mutating action
is limited to resources tagged for this cluster (and for a NodePool or EC2NodeClass), in this
region and account; the reads that EC2, pricing and IAM allow on no narrower resource are on
`*`.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Aws
from aws_cdk import aws_iam as iam

_EC2_CREATING_ACTIONS = ["ec2:RunInstances", "ec2:CreateFleet"]


def controller_policies(
    cluster_name: str, node_role_arn: str, queue_arn: str
) -> dict[str, list[iam.PolicyStatement]]:
    """Upstream's six policies by name, for a cluster whose name is literal text (it appears in
    condition keys, which CloudFormation cannot take from a token)."""
    return {
        "NodeLifecycle": _node_lifecycle(cluster_name),
        "IamIntegration": _iam_integration(cluster_name, node_role_arn),
        "EksIntegration": [
            _statement(
                "AllowAPIServerEndpointDiscovery",
                ["eks:DescribeCluster"],
                [f"arn:{Aws.PARTITION}:eks:{Aws.REGION}:{Aws.ACCOUNT_ID}:cluster/{cluster_name}"],
            )
        ],
        "Interruption": [
            _statement(
                "AllowInterruptionQueueActions",
                ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
                [queue_arn],
            )
        ],
        "ZonalShift": [
            _statement(
                "AllowZonalShiftStatusReadOnly",
                ["arc-zonal-shift:GetManagedResource"],
                ["*"],
                {
                    "StringEquals": {
                        "arc-zonal-shift:ResourceIdentifier": f"arn:{Aws.PARTITION}:eks:"
                        f"{Aws.REGION}:{Aws.ACCOUNT_ID}:cluster/{cluster_name}"
                    }
                },
            )
        ],
        "ResourceDiscovery": _resource_discovery(),
    }


def _node_lifecycle(cluster_name: str) -> list[iam.PolicyStatement]:
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    requested = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
    }
    of_node_pool = {"StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}
    requested_for_node_pool = {"StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}
    tagged_at_launch = _ec2_arns(
        "fleet",
        "instance",
        "volume",
        "network-interface",
        "launch-template",
        "spot-instances-request",
    )
    return [
        _statement(
            "AllowScopedEC2InstanceAccessActions",
            _EC2_CREATING_ACTIONS,
            [
                f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}::image/*",
                f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}::snapshot/*",
                *_ec2_arns("security-group", "subnet", "capacity-reservation", "placement-group"),
            ],
        ),
        _statement(
            "AllowScopedEC2LaunchTemplateAccessActions",
            _EC2_CREATING_ACTIONS,
            _ec2_arns("launch-template"),
            {"StringEquals": owned, **of_node_pool},
        ),
        _statement(
            "AllowScopedEC2InstanceActionsWithTags",
            [*_EC2_CREATING_ACTIONS, "ec2:CreateLaunchTemplate"],
            tagged_at_launch,
            {"StringEquals": requested, **requested_for_node_pool},
        ),
        _statement(
            "AllowScopedResourceCreationTagging",
            ["ec2:CreateTags"],
            tagged_at_launch,
            {
                "StringEquals": {
                    **requested,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                **requested_for_node_pool,
            },
        ),
        _statement(
            "AllowScopedResourceTagging",
            ["ec2:CreateTags"],
            _ec2_arns("instance"),
            {
                "StringEquals": owned,
                **of_node_pool,
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        ),
        # RebootInstances (new in v1.15): node repair reboots a node in place for a fault a
        # reboot clears, behind the RebootForRepair AWS feature gate; scoped as upstream scopes
        # it, exactly as TerminateInstances (reference/cloudformation.md, AllowScopedDeletion).
        _statement(
            "AllowScopedDeletion",
            ["ec2:TerminateInstances", "ec2:RebootInstances", "ec2:DeleteLaunchTemplate"],
            _ec2_arns("instance", "launch-template"),
            {"StringEquals": owned, **of_node_pool},
        ),
    ]


def _iam_integration(cluster_name: str, node_role_arn: str) -> list[iam.PolicyStatement]:
    profiles = [f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:instance-profile/*"]
    owned = {
        f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": Aws.REGION,
    }
    requested = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
        "aws:RequestTag/topology.kubernetes.io/region": Aws.REGION,
    }
    return [
        _statement(
            "AllowPassingInstanceRole",
            ["iam:PassRole"],
            [node_role_arn],
            {
                "StringEquals": {
                    "iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]
                }
            },
        ),
        _statement(
            "AllowScopedInstanceProfileCreationActions",
            ["iam:CreateInstanceProfile"],
            profiles,
            {
                "StringEquals": requested,
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
        _statement(
            "AllowScopedInstanceProfileTagActions",
            ["iam:TagInstanceProfile"],
            profiles,
            {
                "StringEquals": {**owned, **requested},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        ),
        _statement(
            "AllowScopedInstanceProfileActions",
            [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            profiles,
            {
                "StringEquals": owned,
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
    ]


def _resource_discovery() -> list[iam.PolicyStatement]:
    return [
        # EC2 Describe* calls have no resource-level permissions: `*`, in this region only.
        _statement(
            "AllowRegionalReadActions",
            [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            ["*"],
            {"StringEquals": {"aws:RequestedRegion": Aws.REGION}},
        ),
        _statement(
            "AllowSSMReadActions",
            ["ssm:GetParameter"],
            [f"arn:{Aws.PARTITION}:ssm:{Aws.REGION}::parameter/aws/service/*"],
        ),
        _statement("AllowPricingReadActions", ["pricing:GetProducts"], ["*"]),
        _statement("AllowUnscopedInstanceProfileListAction", ["iam:ListInstanceProfiles"], ["*"]),
        _statement(
            "AllowInstanceProfileReadActions",
            ["iam:GetInstanceProfile"],
            [f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:instance-profile/*"],
        ),
    ]


def _ec2_arns(*resource_types: str) -> list[str]:
    return [f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:*:{t}/*" for t in resource_types]


def _statement(
    sid: str,
    actions: list[str],
    resources: list[str],
    conditions: dict[str, Any] | None = None,
) -> iam.PolicyStatement:
    return iam.PolicyStatement(sid=sid, actions=actions, resources=resources, conditions=conditions)
