"""An IAM policy simulation over every role the app creates (issue 32), examples/pipeline's
roles and the cluster verify role it assumes, and, once more, in the aws-cn and aws-us-gov
partitions (issue 38 item 7).

For each role, the calls its component makes, with their request context (action, resource
ARN, request and resource tags), are evaluated by @cloud-copilot/iam-simulate against the
synthesized policies plus the AWS managed policies attached (vendored, with their version, in
tests/fixtures/aws-managed-policies). Each call cites where its shape comes from. All cases run
in one Node process (tests/support/iam_simulation.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import pytest

from tests.support.cfn import synth
from tests.support.iam_simulation import (
    ACCOUNT,
    PARTITION,
    REGION,
    STACK_ID,
    Call,
    Environment,
    Policy,
    arn_of,
    assume_request,
    deployed_in,
    environment_of,
    identity_request,
    logical_id,
    physical_name,
    resolve,
    role_id,
    role_policies,
    session_principal,
    simulate,
    trust_policy,
    without_statement,
)
from tests.support.pipeline_example import example_cluster_template, example_pipeline_template
from tests.support.run_cache import shared_json
from tests.support.settings import (
    AUTO_MODE,
    CLOUDWATCH_METRICS,
    DEFAULT,
    EXISTING,
    IN_PARTITION,
    KARPENTER,
    KARPENTER_OPERATOR,
    KMS_KEY,
    MIXED,
    MIXED_AUTO_MODE,
    MULTI,
    NODE_GROUP_KMS,
    PARTITION_REGIONS,
    THREE_POOLS,
    TRAINING,
)
from tests.support.volume_key import GUIDE_GRANT_OPERATIONS

# Every settings set below leaves the cluster its default name.
CLUSTER = "gpu-pool"
TEMPLATES = {
    "default": DEFAULT,
    "karpenter": KARPENTER,
    "auto-mode": AUTO_MODE,
    "cloudwatch": CLOUDWATCH_METRICS,
    "node-group-kms": NODE_GROUP_KMS,
}
# examples/pipeline: the pipeline stack, and the us-east-1 cluster's stack it deploys (with the
# verify role), both in the tooling account.
PIPELINE_ACCOUNT = "111111111111"
PIPELINE_CLUSTER = "GpuInference-us-east-1"
ALLOWED, DENIED = "Allowed", "ImplicitlyDenied"
# A component's calls by name; a call that names a resource of the template is computed from it.
CallSet = dict[str, Call | Callable[[dict[str, Any]], Call]]

CLUSTER_ARN = f"arn:{PARTITION}:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}"
NODEGROUP_ARN = (
    f"arn:{PARTITION}:eks:{REGION}:{ACCOUNT}:nodegroup/{CLUSTER}/"
    "GpuPoolG5Xlarge-abc/8ec9f0a2-1111-2222-3333-444455556666"
)
ASG_NAME = "eks-GpuPoolG5Xlarge-abc-8ec9f0a2-1111-2222-3333-444455556666"
ASG_ARN = (
    f"arn:{PARTITION}:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:"
    f"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0:autoScalingGroupName/{ASG_NAME}"
)
INSTANCE_ARN = f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:instance/i-0123456789abcdef0"
SUBNET_ARN = f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:subnet/subnet-0123456789abcdef0"
SECURITY_GROUP_ARN = f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:security-group/sg-0123456789abcdef0"
ENI_ARN = f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:network-interface/eni-0123456789abcdef0"
VOLUME_ARN = f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:volume/vol-0123456789abcdef0"
FLEET_ARN = (
    f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:fleet/fleet-01234567-89ab-cdef-0123-456789abcdef"
)
LAUNCH_TEMPLATE_ARN = f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:launch-template/lt-0123456789abcdef0"
IMAGE_ARN = f"arn:{PARTITION}:ec2:{REGION}::image/ami-0123456789abcdef0"
REPOSITORY_ARN = f"arn:{PARTITION}:ecr:{REGION}:{ACCOUNT}:repository/inference"
PROFILE_ARN = f"arn:{PARTITION}:iam::{ACCOUNT}:instance-profile/{CLUSTER}_1234567890123456789"


def tags(kind: str, values: dict[str, str]) -> dict[str, Any]:
    """`values` as aws:RequestTag/<key> ("request", with aws:TagKeys) or aws:ResourceTag/<key>
    ("resource") condition keys."""
    prefix = {"request": "aws:RequestTag/", "resource": "aws:ResourceTag/"}[kind]
    context: dict[str, Any] = {prefix + k: v for k, v in values.items()}
    if kind == "request":
        context["aws:TagKeys"] = sorted(values)
    return context


# ---- the calls, by component ---------------------------------------------------------------


# Pod Identity session tags on every pod role's session (EKS user guide, pod-id-abac.adoc).
def pod_session(namespace: str, service_account: str) -> dict[str, str]:
    return {
        "aws:PrincipalTag/eks-cluster-name": CLUSTER,
        "aws:PrincipalTag/kubernetes-namespace": namespace,
        "aws:PrincipalTag/kubernetes-service-account": service_account,
    }


# A node: the Pod Identity agent exchanges tokens for pods (EKS user guide,
# pod-id-agent-setup.adoc: the node role needs eks-auth:AssumeRoleForPodIdentity), the kubelet
# pulls images from the account's private ECR (ECR user guide, ECR_on_EKS.md).
NODE_CALLS: CallSet = {
    "pod-identity": Call("eks-auth:AssumeRoleForPodIdentity", CLUSTER_ARN),
    "ecr-token": Call("ecr:GetAuthorizationToken", "*"),
    "ecr-image": Call("ecr:BatchGetImage", REPOSITORY_ARN),
    "ecr-layer": Call("ecr:GetDownloadUrlForLayer", REPOSITORY_ARN),
}
# The VPC CNI on node groups and Karpenter nodes runs on the node role (amazon-vpc-cni-k8s
# docs/iam-policy.md; pkg/awsutils/awsutils.go createENI tags each ENI it creates).
CNI_ENI_TAGS = {
    "node.k8s.amazonaws.com/instance_id": "i-0123456789abcdef0",
    "cluster.k8s.amazonaws.com/name": CLUSTER,
}
CNI_CALLS: CallSet = {
    "describe-instances": Call("ec2:DescribeInstances", "*"),
    "create-eni": Call("ec2:CreateNetworkInterface", ENI_ARN, tags("request", CNI_ENI_TAGS)),
    "create-eni-subnet": Call("ec2:CreateNetworkInterface", SUBNET_ARN),
    "tag-eni": Call(
        "ec2:CreateTags",
        ENI_ARN,
        {"ec2:CreateAction": "CreateNetworkInterface", **tags("request", CNI_ENI_TAGS)},
    ),
    "attach-eni": Call("ec2:AttachNetworkInterface", ENI_ARN),
    "assign-ips": Call("ec2:AssignPrivateIpAddresses", ENI_ARN),
}

# EKS's tags on a managed node group's ASG (EKS user guide, managed-node-groups.adoc; the
# autoscaler discovers groups by the last two).
ASG_TAGS = {
    "eks:cluster-name": CLUSTER,
    "eks:nodegroup-name": "GpuPoolG5Xlarge-abc",
    "kubernetes.io/cluster/gpu-pool": "owned",
    "k8s.io/cluster-autoscaler/enabled": "true",
    "k8s.io/cluster-autoscaler/gpu-pool": "owned",
}
OTHER_ASG_TAGS = {**ASG_TAGS, "eks:cluster-name": "other"}

# Cluster Autoscaler's AWS provider (kubernetes/autoscaler, cluster-autoscaler/cloudprovider/
# aws/README.md "IAM Policy"; aws_manager.go and auto_scaling_groups.go make these calls).
CA_SESSION = pod_session("kube-system", "cluster-autoscaler")
CA_CALLS: CallSet = {
    "describe-asgs": Call("autoscaling:DescribeAutoScalingGroups", "*", CA_SESSION),
    "describe-instances": Call("autoscaling:DescribeAutoScalingInstances", "*", CA_SESSION),
    "describe-tags": Call("autoscaling:DescribeTags", "*", CA_SESSION),
    "describe-launch-template": Call("ec2:DescribeLaunchTemplateVersions", "*", CA_SESSION),
    "describe-types": Call("ec2:DescribeInstanceTypes", "*", CA_SESSION),
    "describe-nodegroup": Call("eks:DescribeNodegroup", NODEGROUP_ARN, CA_SESSION),
    "scale": Call(
        "autoscaling:SetDesiredCapacity", ASG_ARN, {**CA_SESSION, **tags("resource", ASG_TAGS)}
    ),
    "terminate": Call(
        "autoscaling:TerminateInstanceInAutoScalingGroup",
        ASG_ARN,
        {**CA_SESSION, **tags("resource", ASG_TAGS)},
    ),
}
CA_DENIED: CallSet = {
    "scale-other-cluster": Call(
        "autoscaling:SetDesiredCapacity",
        ASG_ARN,
        {**CA_SESSION, **tags("resource", OTHER_ASG_TAGS)},
    ),
}


# gpu-pool's node group handler (gpu_pool/cdk/nodegroups/handler/index.py): DescribeNodegroup
# and UpdateNodegroupConfig on its group, DescribeAutoScalingGroups, CreateOrUpdateTags and
# DeleteTags on the group's ASG with the tags of the synthesized Custom::GpuPoolAsgTags.
def _asg_tags(template: dict[str, Any]) -> dict[str, str]:
    resource = next(
        r for r in template["Resources"].values() if r["Type"] == "Custom::GpuPoolAsgTags"
    )
    return {t["Key"]: t["Value"] for t in resolve(template, resource["Properties"]["Tags"])}


def _tag_asg(resource_tags: dict[str, str]) -> Callable[[dict[str, Any]], Call]:
    return lambda t: Call(
        "autoscaling:CreateOrUpdateTags",
        ASG_ARN,
        {**tags("resource", resource_tags), **tags("request", _asg_tags(t))},
    )


HANDLER_CALLS: CallSet = {
    "describe-nodegroup": Call("eks:DescribeNodegroup", NODEGROUP_ARN),
    "update-nodegroup": Call("eks:UpdateNodegroupConfig", NODEGROUP_ARN),
    "describe-asgs": Call("autoscaling:DescribeAutoScalingGroups", "*"),
    "tag-asg": _tag_asg(ASG_TAGS),
    # By key alone (the handler's _delete).
    "untag-asg": lambda t: Call(
        "autoscaling:DeleteTags",
        ASG_ARN,
        {**tags("resource", ASG_TAGS), "aws:TagKeys": sorted(_asg_tags(t))},
    ),
    # The Auto Mode guard asks whether its stack is rolling back (the handler's _rolling_back):
    # DescribeStacks on the request's StackId, this stack's ARN; no other stack.
    "describe-own-stack": Call("cloudformation:DescribeStacks", STACK_ID),
}
HANDLER_DENIED: CallSet = {
    "tag-other-cluster": _tag_asg(OTHER_ASG_TAGS),
    "describe-other-stack": Call(
        "cloudformation:DescribeStacks",
        f"arn:{PARTITION}:cloudformation:{REGION}:{ACCOUNT}:stack/Other/"
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    ),
}

# Karpenter v1.14.1: the tags it launches with are the EC2NodeClass's spec.tags merged with
# its own (pkg/utils GetTags: kubernetes.io/cluster/<name>=owned, karpenter.sh/nodepool,
# eks:eks-cluster-name, karpenter.k8s.aws/ec2nodeclass) on CreateFleet, its launch templates
# and the CreateTags of the launch; after launch its tagging controller adds Name,
# karpenter.sh/nodeclaim and eks:eks-cluster-name (pkg/controllers/nodeclaim/tagging);
# instance profiles carry the region tag its reference policy requires (website v1.14
# getting-started cloudformation.yaml, the statements gpu_pool/cdk/karpenter/iam.py copies).
K_SESSION = pod_session("kube-system", "karpenter")
KARPENTER_TAGS = {
    "gpu-pool.io/pool": "inference",
    "kubernetes.io/cluster/gpu-pool": "owned",
    "karpenter.sh/nodepool": "gpu-pool-inference",
    "eks:eks-cluster-name": CLUSTER,
    "karpenter.k8s.aws/ec2nodeclass": "gpu-pool-inference",
}
KARPENTER_OWNED = {
    "kubernetes.io/cluster/gpu-pool": "owned",
    "karpenter.sh/nodepool": "gpu-pool-inference",
}
NODECLAIM_TAGS = {
    "Name": "ip-10-0-1-23.ec2.internal",
    "karpenter.sh/nodeclaim": "gpu-pool-inference-x7k2p",
    "eks:eks-cluster-name": CLUSTER,
}
PROFILE_TAGS = {
    "kubernetes.io/cluster/gpu-pool": "owned",
    "eks:eks-cluster-name": CLUSTER,
    "topology.kubernetes.io/region": REGION,
    "karpenter.k8s.aws/ec2nodeclass": "gpu-pool-inference",
}


def _karpenter_node_role(template: dict[str, Any]) -> str:
    return arn_of(template, role_id(template, "KarpenterNodeRole"))


def _interruption_queue(template: dict[str, Any]) -> str:
    return arn_of(template, logical_id(template, "AWS::SQS::Queue", "KarpenterInterruptionQueue"))


K_LAUNCH = {**K_SESSION, **tags("request", KARPENTER_TAGS)}
K_OWNED = {**K_SESSION, **tags("resource", KARPENTER_OWNED)}
# CreateFleet launches through RunInstances, whose permission EC2 checks for the caller too, on
# the resources CreateFleet's own authorization does not list (EC2 user guide, "EC2 Fleet
# prerequisites"; Karpenter's policy allows both actions on the same resources).
LAUNCH_VERBS = {"ec2:CreateFleet": "create-fleet", "ec2:RunInstances": "run-instances"}
KARPENTER_CALLS: CallSet = {
    **{
        f"{LAUNCH_VERBS[action]}-{kind}": Call(action, arn, K_LAUNCH)
        for action, kinds in {
            "ec2:CreateFleet": {"fleet": FLEET_ARN, "instance": INSTANCE_ARN, "volume": VOLUME_ARN},
            "ec2:RunInstances": {
                "instance": INSTANCE_ARN,
                "volume": VOLUME_ARN,
                "network-interface": ENI_ARN,
            },
        }.items()
        for kind, arn in kinds.items()
    },
    **{
        f"{LAUNCH_VERBS[action]}-{kind}": Call(action, arn, K_SESSION)
        for action, kinds in {
            "ec2:CreateFleet": {"image": IMAGE_ARN, "subnet": SUBNET_ARN},
            "ec2:RunInstances": {"security-group": SECURITY_GROUP_ARN, "subnet": SUBNET_ARN},
        }.items()
        for kind, arn in kinds.items()
    },
    "create-fleet-launch-template": Call(
        "ec2:CreateFleet", LAUNCH_TEMPLATE_ARN, {**K_SESSION, **tags("resource", KARPENTER_TAGS)}
    ),
    "create-launch-template": Call("ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE_ARN, K_LAUNCH),
    "tag-at-launch": Call(
        "ec2:CreateTags", INSTANCE_ARN, {**K_LAUNCH, "ec2:CreateAction": "CreateFleet"}
    ),
    "tag-nodeclaim": Call(
        "ec2:CreateTags", INSTANCE_ARN, {**K_OWNED, **tags("request", NODECLAIM_TAGS)}
    ),
    "terminate": Call("ec2:TerminateInstances", INSTANCE_ARN, K_OWNED),
    # Node repair's in-place reboot (v1.15 RebootForRepair gate), scoped as terminate is.
    "reboot": Call("ec2:RebootInstances", INSTANCE_ARN, K_OWNED),
    "delete-launch-template": Call("ec2:DeleteLaunchTemplate", LAUNCH_TEMPLATE_ARN, K_OWNED),
    "pass-node-role": lambda t: Call(
        "iam:PassRole",
        _karpenter_node_role(t),
        {**K_SESSION, "iam:PassedToService": "ec2.amazonaws.com"},
    ),
    "create-instance-profile": Call(
        "iam:CreateInstanceProfile", PROFILE_ARN, {**K_SESSION, **tags("request", PROFILE_TAGS)}
    ),
    "add-role-to-profile": Call(
        "iam:AddRoleToInstanceProfile",
        PROFILE_ARN,
        {**K_SESSION, **tags("resource", PROFILE_TAGS)},
    ),
    "get-instance-profile": Call("iam:GetInstanceProfile", PROFILE_ARN, K_SESSION),
    "delete-instance-profile": Call(
        "iam:DeleteInstanceProfile",
        PROFILE_ARN,
        {**K_SESSION, **tags("resource", PROFILE_TAGS)},
    ),
    "tag-launch-template-at-create": Call(
        "ec2:CreateTags",
        LAUNCH_TEMPLATE_ARN,
        {**K_LAUNCH, "ec2:CreateAction": "CreateLaunchTemplate"},
    ),
    "describe-instances": Call("ec2:DescribeInstances", "*", K_SESSION),
    "describe-images": Call("ec2:DescribeImages", "*", K_SESSION),
    "describe-cluster": Call("eks:DescribeCluster", CLUSTER_ARN, K_SESSION),
    "describe-types": Call("ec2:DescribeInstanceTypes", "*", K_SESSION),
    "describe-subnets": Call("ec2:DescribeSubnets", "*", K_SESSION),
    "pricing": Call("pricing:GetProducts", "*", K_SESSION),
    "receive-interruptions": lambda t: Call(
        "sqs:ReceiveMessage", _interruption_queue(t), K_SESSION
    ),
    "delete-interruption": lambda t: Call("sqs:DeleteMessage", _interruption_queue(t), K_SESSION),
}
KARPENTER_DENIED: CallSet = {
    # A tag key its after-launch tagging statement does not allow.
    "tag-nodeclaim-with-other-key": Call(
        "ec2:CreateTags",
        INSTANCE_ARN,
        {**K_OWNED, **tags("request", {**NODECLAIM_TAGS, "team": "ml"})},
    ),
    # An instance of another cluster.
    "terminate-other-cluster": Call(
        "ec2:TerminateInstances",
        INSTANCE_ARN,
        {**K_SESSION, **tags("resource", {"kubernetes.io/cluster/other": "owned"})},
    ),
    "reboot-other-cluster": Call(
        "ec2:RebootInstances",
        INSTANCE_ARN,
        {**K_SESSION, **tags("resource", {"kubernetes.io/cluster/other": "owned"})},
    ),
    # An instance of this cluster that no NodePool launched (a node group's).
    "reboot-node-group-instance": Call(
        "ec2:RebootInstances",
        INSTANCE_ARN,
        {**K_SESSION, **tags("resource", {f"kubernetes.io/cluster/{CLUSTER}": "owned"})},
    ),
    # Any role but its node role.
    "pass-cluster-role": lambda t: Call(
        "iam:PassRole",
        arn_of(t, role_id(t, "ClusterRole")),
        {**K_SESSION, "iam:PassedToService": "ec2.amazonaws.com"},
    ),
}


# EKS Auto Mode launches a NodeClass's nodes with the cluster role, in a session tagged
# eks:eks-cluster-name (what AmazonEKSComputePolicy's ${aws:PrincipalTag/...} reads; the
# role's trust policy must allow sts:TagSession, EKS user guide auto-cluster-iam-role.adoc).
# Its launch tags are EKS's own (eks:eks-cluster-name, eks:kubernetes-node-class-name,
# eks:kubernetes-node-pool-name) plus the NodeClass's spec.tags, which the managed policies do
# not permit without extra cluster-role permissions (same page, "Custom AWS tags for EKS Auto
# resources"). gpu-pool's NodeClasses carry gpu-pool.io/pool (gpu_pool/plan/auto_mode.py).
AUTO_SESSION = {"aws:PrincipalTag/eks:eks-cluster-name": CLUSTER}
AUTO_EKS_TAGS = {
    "eks:eks-cluster-name": CLUSTER,
    "eks:kubernetes-node-class-name": "gpu-pool-inference",
    "eks:kubernetes-node-pool-name": "gpu-pool-inference",
}
AUTO_POOL_TAGS = {**AUTO_EKS_TAGS, "gpu-pool.io/pool": "inference"}
AUTO_LAUNCH = {
    "create-fleet": ("ec2:CreateFleet", FLEET_ARN),
    "run-instances": ("ec2:RunInstances", INSTANCE_ARN),
    "create-launch-template": ("ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE_ARN),
}
AUTO_MODE_CALLS: CallSet = {
    **{
        f"{name}-eks-tags": Call(action, arn, {**AUTO_SESSION, **tags("request", AUTO_EKS_TAGS)})
        for name, (action, arn) in AUTO_LAUNCH.items()
    },
    "run-instances-subnet": Call("ec2:RunInstances", SUBNET_ARN, AUTO_SESSION),
    "tag-at-launch": Call(
        "ec2:CreateTags",
        INSTANCE_ARN,
        {**AUTO_SESSION, **tags("request", AUTO_POOL_TAGS), "ec2:CreateAction": "RunInstances"},
    ),
    "pass-node-role": lambda t: Call(
        "iam:PassRole",
        arn_of(t, role_id(t, "GpuPoolInferenceNodeRole")),
        {**AUTO_SESSION, "iam:PassedToService": "ec2.amazonaws.com"},
    ),
}
# The spot pool's customer key (ephemeralStorage.kmsKeyID): Auto Mode encrypts the node volumes
# as the cluster role (EKS user guide, auto-kms.adoc): data keys and grants for EBS, the grants
# only for an AWS resource. Any other key, and a grant not for an AWS resource, stay denied.
# Both keys have KMS's default key policy, which lets IAM policies of the account allow their use
# (KMS developer guide, "Default key policy": "Enable IAM User Permissions"); the app's statements
# are what allow the cluster role, as docs/provisioners.md says for a key of one's own.
OTHER_KMS_KEY = KMS_KEY.replace("1234abcd", "9999ffff")
DEFAULT_KEY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "Enable IAM User Permissions",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{PARTITION}:iam::{ACCOUNT}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ],
}


def _kms(action: str, key: str, **context: str) -> Call:
    return Call(action, key, {**AUTO_SESSION, **context}, DEFAULT_KEY_POLICY)


AUTO_MODE_KMS_CALLS: CallSet = {
    "volume-key-data-key": _kms("kms:GenerateDataKeyWithoutPlaintext", KMS_KEY),
    "volume-key-decrypt": _kms("kms:Decrypt", KMS_KEY),
    "volume-key-grant-for-ebs": _kms(
        "kms:CreateGrant", KMS_KEY, **{"kms:GrantIsForAWSResource": "true"}
    ),
}
AUTO_MODE_KMS_DENIED: CallSet = {
    "other-key-decrypt": _kms("kms:Decrypt", OTHER_KMS_KEY),
    "volume-key-grant-not-for-a-resource": _kms(
        "kms:CreateGrant", KMS_KEY, **{"kms:GrantIsForAWSResource": "false"}
    ),
}
# A node group pool's customer key (issue 38 item 4). The node group handler gives EC2 Auto
# Scaling's service-linked role the grant of the Auto Scaling user guide ("Required AWS KMS key
# policy for use with encrypted volumes": grantee the role, Example 2's operations), after
# creating the role where the account has none (the handler's _volume_key_grant), and revokes it
# on delete; no other grantee, key, operation or service-linked role.
AUTOSCALING_SLR = (
    f"arn:{PARTITION}:iam::{ACCOUNT}:role/aws-service-role/autoscaling.amazonaws.com/"
    "AWSServiceRoleForAutoScaling"
)
GRANT_OPERATIONS = list(GUIDE_GRANT_OPERATIONS)


def _grant(key: str, grantee: str = AUTOSCALING_SLR, operations=tuple(GRANT_OPERATIONS)) -> Call:
    context = {"kms:GranteePrincipal": grantee, "kms:GrantOperations": list(operations)}
    return Call("kms:CreateGrant", key, context, DEFAULT_KEY_POLICY)


KEY_GRANT_CALLS: CallSet = {
    "create-service-linked-role": Call(
        "iam:CreateServiceLinkedRole",
        AUTOSCALING_SLR,
        {"iam:AWSServiceName": "autoscaling.amazonaws.com"},
    ),
    "grant-key-to-auto-scaling": _grant(KMS_KEY),
    "revoke-grant": Call("kms:RevokeGrant", KMS_KEY, {}, DEFAULT_KEY_POLICY),
}
KEY_GRANT_DENIED: CallSet = {
    "grant-key-to-another-role": _grant(KMS_KEY, f"arn:{PARTITION}:iam::{ACCOUNT}:role/other"),
    "grant-more-operations": _grant(KMS_KEY, operations=(*GRANT_OPERATIONS, "RetireGrant")),
    "grant-another-key": _grant(OTHER_KMS_KEY),
    "create-another-service-linked-role": Call(
        "iam:CreateServiceLinkedRole",
        f"arn:{PARTITION}:iam::{ACCOUNT}:role/aws-service-role/spot.amazonaws.com/"
        "AWSServiceRoleForEC2Spot",
        {"iam:AWSServiceName": "spot.amazonaws.com"},
    ),
}
# Karpenter's controller encrypts the rocket pool's volumes with its key through EC2 (Karpenter
# troubleshooting, "Node terminates before ready on failed encrypted EBS volume"); not directly,
# and no other key.
VIA_EC2 = {"kms:ViaService": f"ec2.{REGION}.amazonaws.com"}


def _karpenter_kms(action: str, key: str, context: dict[str, str]) -> Call:
    return Call(action, key, {**K_SESSION, **context}, DEFAULT_KEY_POLICY)


KARPENTER_KMS_CALLS: CallSet = {
    f"volume-key-{action.split(':')[1]}": _karpenter_kms(action, KMS_KEY, VIA_EC2)
    for action in (
        "kms:GenerateDataKeyWithoutPlaintext",
        "kms:Decrypt",
        "kms:CreateGrant",
        "kms:DescribeKey",
    )
}
KARPENTER_KMS_DENIED: CallSet = {
    "volume-key-decrypt-directly": _karpenter_kms("kms:Decrypt", KMS_KEY, {}),
    "other-key-decrypt": _karpenter_kms("kms:Decrypt", OTHER_KMS_KEY, VIA_EC2),
}
# Issue 32 item 2: the same launches with the pool's NodeClass tag, which AmazonEKSComputePolicy
# alone denies (it allows only EKS's own tag keys); the cluster role's statement from the EKS user
# guide (auto-cluster-iam-role.adoc, custom tags) allows them. These cases were denied before it.
AUTO_MODE_POOL_TAG: CallSet = {
    f"{name}-pool-tag": Call(action, arn, {**AUTO_SESSION, **tags("request", AUTO_POOL_TAGS)})
    for name, (action, arn) in AUTO_LAUNCH.items()
}

# The CloudWatch agent of the amazon-cloudwatch-observability add-on: Container Insights
# metrics as embedded-metric-format log events in /aws/containerinsights/<cluster>/performance
# (CloudWatch user guide, Container-Insights-reference-performance-logs-EKS.html), and the
# instance's tags and volumes for its dimensions.
CW_SESSION = pod_session("amazon-cloudwatch", "cloudwatch-agent")
CW_LOG_GROUP = (
    f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:"
    f"/aws/containerinsights/{CLUSTER}/performance"
)
CW_CALLS: CallSet = {
    "create-log-group": Call("logs:CreateLogGroup", CW_LOG_GROUP, CW_SESSION),
    "create-log-stream": Call(
        "logs:CreateLogStream", f"{CW_LOG_GROUP}:log-stream:ip-10-0-1-23", CW_SESSION
    ),
    "put-log-events": Call(
        "logs:PutLogEvents", f"{CW_LOG_GROUP}:log-stream:ip-10-0-1-23", CW_SESSION
    ),
    "describe-tags": Call("ec2:DescribeTags", "*", CW_SESSION),
    "describe-volumes": Call("ec2:DescribeVolumes", "*", CW_SESSION),
}


def _handler_log_stream(template: dict[str, Any]) -> str:
    """The handler Lambda writes to its own log group (its LoggingConfig.LogGroup)."""
    group = physical_name(
        template, logical_id(template, "AWS::Logs::LogGroup", "GpuPoolNodegroupHandlerLogs")
    )
    return f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{group}:log-stream:2026/12/04/x"


HANDLER_LOG_CALLS: CallSet = {
    "create-log-stream": lambda t: Call("logs:CreateLogStream", _handler_log_stream(t)),
    "put-log-events": lambda t: Call("logs:PutLogEvents", _handler_log_stream(t)),
}
# The Provider framework's function invokes the handler (aws-cdk-lib custom_resources).
FRAMEWORK_CALLS: CallSet = {
    "invoke-handler": lambda t: Call(
        "lambda:InvokeFunction",
        arn_of(t, logical_id(t, "AWS::Lambda::Function", "GpuPoolNodegroupHandler")),
    ),
}


# aws-cdk-lib's VPC flow log role: the VPC Flow Logs service writes the flow log records to the
# log group the VPC construct creates (VPC user guide, "Publish flow logs to CloudWatch Logs":
# the role's CreateLogStream, PutLogEvents, DescribeLogStreams), and no other log group.
def _flow_log_stream(template: dict[str, Any], logical: str = "VpcFlowLogs") -> str:
    group = physical_name(template, logical_id(template, "AWS::Logs::LogGroup", logical))
    return f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{group}:log-stream:eni-0123-all"


FLOW_LOG_CALLS: CallSet = {
    verb: lambda t, action=action: Call(action, _flow_log_stream(t))
    for verb, action in {
        "create-log-stream": "logs:CreateLogStream",
        "put-log-events": "logs:PutLogEvents",
        "describe-log-streams": "logs:DescribeLogStreams",
    }.items()
}
FLOW_LOG_DENIED: CallSet = {
    "put-other-log-group": Call(
        "logs:PutLogEvents",
        f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:other:log-stream:eni-0123-all",
    ),
}


# aws-cdk-lib's kubectl provider: its handler runs `aws eks update-kubeconfig` on the cluster
# (aws-eks-v2 kubectl-handler: DescribeCluster), in the cluster's VPC (Lambda's
# AWSLambdaVPCAccessExecutionRole: the ENIs), writing its logs; its framework function invokes
# it. No other cluster.
def _kubectl_handler_log_stream(template: dict[str, Any]) -> str:
    function = physical_name(
        template, logical_id(template, "AWS::Lambda::Function", "ClusterKubectlProviderHandler")
    )
    return (
        f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/{function}:"
        "log-stream:2026/12/04/x"
    )


KUBECTL_CALLS: CallSet = {
    "describe-cluster": Call("eks:DescribeCluster", CLUSTER_ARN),
    "create-eni": Call("ec2:CreateNetworkInterface", ENI_ARN),
    "put-log-events": lambda t: Call("logs:PutLogEvents", _kubectl_handler_log_stream(t)),
}
KUBECTL_DENIED: CallSet = {
    "describe-other-cluster": Call(
        "eks:DescribeCluster", f"arn:{PARTITION}:eks:{REGION}:{ACCOUNT}:cluster/other"
    ),
    "update-cluster": Call("eks:UpdateClusterConfig", CLUSTER_ARN),
}
KUBECTL_FRAMEWORK_CALLS: CallSet = {
    "invoke-handler": lambda t: Call(
        "lambda:InvokeFunction",
        arn_of(t, logical_id(t, "AWS::Lambda::Function", "ClusterKubectlProviderHandler")),
    ),
}

# examples/pipeline (docs/pipeline.md). Its source action reads the repository through the
# connection: a codeconnections ARN needs codeconnections:UseConnection, for "the service
# prefix needs to match that of the resource" (Developer Tools console user guide, "Connections
# rename - Summary of changes"); another connection, denied. Then it writes the source artifact.
CONNECTION = (
    f"arn:{PARTITION}:codeconnections:{REGION}:{PIPELINE_ACCOUNT}:connection/"
    "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)


def _artifact(template: dict[str, Any]) -> str:
    bucket = arn_of(template, logical_id(template, "AWS::S3::Bucket", "PipelineArtifactsBucket"))
    return f"{bucket}/GpuPoolPipeline/acme_gpu_fl/abcdef0"


SOURCE_CALLS: CallSet = {
    "use-connection": Call("codeconnections:UseConnection", CONNECTION),
    "put-artifact": lambda t: Call("s3:PutObject", _artifact(t)),
}
SOURCE_DENIED: CallSet = {
    "use-other-connection": Call(
        "codeconnections:UseConnection", CONNECTION.replace("0a1b2c3d", "ffffffff")
    ),
}
# The pipeline's own role assumes each action's role (CodePipeline user guide, "CodePipeline
# service role"); not the verify role of a cluster.
PIPELINE_CALLS: CallSet = {
    "assume-source-role": lambda t: Call(
        "sts:AssumeRole", arn_of(t, role_id(t, "PipelineSourceacmegpufleetCodePipelineActionRole"))
    ),
}
PIPELINE_DENIED: CallSet = {
    "assume-verify-role": Call(
        "sts:AssumeRole",
        f"arn:{PARTITION}:iam::{PIPELINE_ACCOUNT}:role/gpu-pool-verify/{PIPELINE_CLUSTER}-verify",
    ),
}


# A CodeBuild project's role writes its build logs to /aws/codebuild/<project> (CodeBuild user
# guide, "Allow CodeBuild to interact with other AWS services") and reads the input artifact.
def _build_logs(project: str) -> Callable[[dict[str, Any]], Call]:
    def call(template: dict[str, Any]) -> Call:
        name = physical_name(template, logical_id(template, "AWS::CodeBuild::Project", project))
        return Call(
            "logs:PutLogEvents",
            f"arn:{PARTITION}:logs:{REGION}:{PIPELINE_ACCOUNT}:log-group:/aws/codebuild/{name}:"
            "log-stream:build-1",
        )

    return call


SYNTH_CALLS: CallSet = {
    "build-logs": _build_logs("PipelineBuildSynthCdkBuildProject"),
    "get-source": lambda t: Call("s3:GetObject", _artifact(t)),
    "put-cloud-assembly": lambda t: Call("s3:PutObject", _artifact(t)),
}
SYNTH_DENIED: CallSet = {
    "put-other-bucket": Call("s3:PutObject", f"arn:{PARTITION}:s3:::other/x"),
    "use-connection": Call("codeconnections:UseConnection", CONNECTION),
}
# A cluster's verify step assumes that cluster's verify role alone (gpu_pool/cdk/pipeline.py).
STEP = PIPELINE_CLUSTER.replace("-", "")
VERIFY_STEP_CALLS: CallSet = {
    "build-logs": _build_logs(f"Pipeline{STEP}Verify{STEP}"),
    "assume-own-verify-role": Call(
        "sts:AssumeRole",
        f"arn:{PARTITION}:iam::{PIPELINE_ACCOUNT}:role/gpu-pool-verify/{PIPELINE_CLUSTER}-verify",
    ),
    "get-source": lambda t: Call("s3:GetObject", _artifact(t)),
}
VERIFY_STEP_DENIED: CallSet = {
    "assume-other-verify-role": Call(
        "sts:AssumeRole",
        f"arn:{PARTITION}:iam::{PIPELINE_ACCOUNT}:role/gpu-pool-verify/Other-verify",
    ),
    "put-artifact": lambda t: Call("s3:PutObject", _artifact(t)),
}
# The verify role itself (gpu_pool/cdk/cluster/verifier.py), in the cluster's stack: update-kubeconfig
# (DescribeCluster), the pool records (DescribeStacks on its own stack), why a launch stalled
# and a reservation; no other cluster or stack, and nothing it could change.
VERIFIED_CLUSTER_ARN = f"arn:{PARTITION}:eks:{REGION}:{PIPELINE_ACCOUNT}:cluster/gpu-inference"
VERIFY_ROLE_CALLS: CallSet = {
    "describe-cluster": Call("eks:DescribeCluster", VERIFIED_CLUSTER_ARN),
    "describe-own-stack": Call(
        "cloudformation:DescribeStacks",
        f"arn:{PARTITION}:cloudformation:{REGION}:{PIPELINE_ACCOUNT}:stack/{PIPELINE_CLUSTER}/"
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    ),
    "scaling-activities": Call("autoscaling:DescribeScalingActivities", "*"),
    "reservations": Call("ec2:DescribeCapacityReservations", "*"),
}
VERIFY_ROLE_DENIED: CallSet = {
    "describe-other-cluster": Call(
        "eks:DescribeCluster", VERIFIED_CLUSTER_ARN.replace("gpu-inference", "other")
    ),
    "describe-other-stack": Call(
        "cloudformation:DescribeStacks",
        f"arn:{PARTITION}:cloudformation:{REGION}:{PIPELINE_ACCOUNT}:stack/Other/"
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    ),
    "scale": Call("autoscaling:SetDesiredCapacity", ASG_ARN),
}


# ---- the cases -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Role:
    """A role in a template (its logical id without CDK's hash), the service that assumes it
    (or the role whose sessions do, by its name without CDK's hash), whether that service tags
    its session, and the calls its component makes."""

    template: str
    name: str
    service: str
    tags_session: bool
    allowed: tuple[CallSet, ...]
    denied: tuple[CallSet, ...] = ()
    # The role whose sessions assume this one (`service` is then its name): its policies are
    # the caller's too, which a trust policy naming the account needs (IAM user guide, "Policy
    # evaluation logic": within one account either policy may allow).
    assumer: Role | None = None


NODE_GROUP_NODE = (NODE_CALLS, CNI_CALLS)
NODE_GROUP_ROLE = Role("default", "GpuPoolNodeRole", "ec2.amazonaws.com", False, NODE_GROUP_NODE)
# aws_eks_v2's system node group (ECR read-only where gpu-pool's have pull-only).
SYSTEM_NODE_ROLE = Role(
    "default",
    "ClusterNodegroupSystemNodesNodeGroupRole",
    "ec2.amazonaws.com",
    False,
    NODE_GROUP_NODE,
)
AUTOSCALER_ROLE = Role(
    "default", "ClusterAutoscalerRole", "pods.eks.amazonaws.com", True, (CA_CALLS,), (CA_DENIED,)
)
HANDLER_ROLE = Role(
    "default",
    "GpuPoolNodegroupHandlerRole",
    "lambda.amazonaws.com",
    False,
    (HANDLER_CALLS, HANDLER_LOG_CALLS),
    (HANDLER_DENIED,),
)
HANDLER_KEY_GRANT_ROLE = Role(
    "node-group-kms",
    "GpuPoolNodegroupHandlerRole",
    "lambda.amazonaws.com",
    False,
    (KEY_GRANT_CALLS,),
    (KEY_GRANT_DENIED,),
)
FRAMEWORK_ROLE = Role(
    "default",
    "GpuPoolNodegroupHandlerProviderframeworkonEventServiceRole",
    "lambda.amazonaws.com",
    False,
    (FRAMEWORK_CALLS,),
)
KARPENTER_NODE_ROLE = Role(
    "karpenter", "KarpenterNodeRole", "ec2.amazonaws.com", False, NODE_GROUP_NODE
)
KARPENTER_ROLE = Role(
    "karpenter",
    "KarpenterControllerRole",
    "pods.eks.amazonaws.com",
    True,
    (KARPENTER_CALLS, KARPENTER_KMS_CALLS),
    (KARPENTER_DENIED, KARPENTER_KMS_DENIED),
)
AUTO_MODE_CLUSTER_ROLE = Role(
    "auto-mode",
    "ClusterRole",
    "eks.amazonaws.com",
    True,
    (AUTO_MODE_CALLS, AUTO_MODE_KMS_CALLS),
    (AUTO_MODE_KMS_DENIED,),
)
AUTO_MODE_NODE_ROLES = tuple(
    Role("auto-mode", f"GpuPool{pool}NodeRole", "ec2.amazonaws.com", False, (NODE_CALLS,))
    for pool in ("Inference", "Arm", "Spot")
)
CLOUDWATCH_ROLE = Role(
    "cloudwatch", "GpuMetricsCloudWatchAgentRole", "pods.eks.amazonaws.com", True, (CW_CALLS,)
)
FLOW_LOG_ROLE = Role(
    "default",
    "VpcFlowLogIAMRole",
    "vpc-flow-logs.amazonaws.com",
    False,
    (FLOW_LOG_CALLS,),
    (FLOW_LOG_DENIED,),
)
KUBECTL_ROLE = Role(
    "default",
    "ClusterKubectlProviderHandlerServiceRole",
    "lambda.amazonaws.com",
    False,
    (KUBECTL_CALLS,),
    (KUBECTL_DENIED,),
)
KUBECTL_FRAMEWORK_ROLE = Role(
    "default",
    "ClusterKubectlProviderframeworkonEventServiceRole",
    "lambda.amazonaws.com",
    False,
    (KUBECTL_FRAMEWORK_CALLS,),
)
PIPELINE_ROLE = Role(
    "pipeline",
    "PipelineRole",
    "codepipeline.amazonaws.com",
    False,
    (PIPELINE_CALLS,),
    (PIPELINE_DENIED,),
)
SOURCE_ROLE = Role(
    "pipeline",
    "PipelineSourceacmegpufleetCodePipelineActionRole",
    "PipelineRole",
    False,
    (SOURCE_CALLS,),
    (SOURCE_DENIED,),
    PIPELINE_ROLE,
)
SYNTH_ROLE = Role(
    "pipeline",
    "PipelineBuildSynthCdkBuildProjectRole",
    "codebuild.amazonaws.com",
    False,
    (SYNTH_CALLS,),
    (SYNTH_DENIED,),
)
VERIFY_STEP_ROLE = Role(
    "pipeline",
    f"Verify{STEP}Role",
    "codebuild.amazonaws.com",
    False,
    (VERIFY_STEP_CALLS,),
    (VERIFY_STEP_DENIED,),
)
VERIFY_ROLE = Role(
    "pipeline-cluster",
    "VerifierRole",
    # Its own cluster's verify step's role, in the pipeline's account.
    VERIFY_STEP_ROLE.name,
    False,
    (VERIFY_ROLE_CALLS,),
    (VERIFY_ROLE_DENIED,),
    VERIFY_STEP_ROLE,
)
# The other partitions (issue 38 item 7): node group, Karpenter and CloudWatch roles, and
# aws-cdk-lib's, of one stack in China's and one in GovCloud's Region, making the same calls in
# that partition and Region (`_in_environment`); Karpenter's pool there has no volume key.
PARTITION_ROLES = tuple(
    replace(role, template=partition, name=name, **({"denied": role.denied[:1]} if kms else {}))
    for partition in IN_PARTITION
    for role, name, kms in (
        (NODE_GROUP_ROLE, "GpuPoolInferenceNodeRole", False),
        (SYSTEM_NODE_ROLE, SYSTEM_NODE_ROLE.name, False),
        (AUTOSCALER_ROLE, AUTOSCALER_ROLE.name, False),
        (HANDLER_ROLE, HANDLER_ROLE.name, False),
        (FRAMEWORK_ROLE, FRAMEWORK_ROLE.name, False),
        (KARPENTER_NODE_ROLE, KARPENTER_NODE_ROLE.name, False),
        (KARPENTER_ROLE, KARPENTER_ROLE.name, True),
        (CLOUDWATCH_ROLE, CLOUDWATCH_ROLE.name, False),
        (FLOW_LOG_ROLE, FLOW_LOG_ROLE.name, False),
        (KUBECTL_ROLE, KUBECTL_ROLE.name, False),
        (KUBECTL_FRAMEWORK_ROLE, KUBECTL_FRAMEWORK_ROLE.name, False),
    )
    for role in [replace(role, allowed=role.allowed[:1]) if kms else role]
)
ROLES = (
    NODE_GROUP_ROLE,
    SYSTEM_NODE_ROLE,
    AUTOSCALER_ROLE,
    HANDLER_ROLE,
    HANDLER_KEY_GRANT_ROLE,
    FRAMEWORK_ROLE,
    KARPENTER_NODE_ROLE,
    KARPENTER_ROLE,
    AUTO_MODE_CLUSTER_ROLE,
    *AUTO_MODE_NODE_ROLES,
    CLOUDWATCH_ROLE,
    FLOW_LOG_ROLE,
    KUBECTL_ROLE,
    KUBECTL_FRAMEWORK_ROLE,
    PIPELINE_ROLE,
    SOURCE_ROLE,
    SYNTH_ROLE,
    VERIFY_STEP_ROLE,
    VERIFY_ROLE,
    *PARTITION_ROLES,
)

# The roles no gpu-pool component makes calls with: EKS's with no gpu-pool-specific call (a
# cluster without Auto Mode).
NOT_SIMULATED = {
    "ClusterRole": "without Auto Mode, only EKS's control plane uses it (AmazonEKSClusterPolicy)",
}


@dataclass(frozen=True)
class Case:
    """One call by one role, and the outcome its component needs. `drop`: simulate with the
    statement of this Sid (or, for statements without one, every one that lists this action)
    removed from the role's policies."""

    role: Role
    calls: CallSet
    call: str
    expected: str
    drop: str | None = None

    @property
    def id(self) -> str:
        deleted = f"/without-{self.drop}" if self.drop else ""
        return f"{self.role.template}/{self.role.name}/{self.call}{deleted}"


def _cases() -> list[Case]:
    cases = [
        Case(role, calls, name, expected)
        for role in ROLES
        for expected, sets in ((ALLOWED, role.allowed), (DENIED, role.denied))
        for calls in sets
        for name in calls
    ]
    # A statement deleted from a synthesized policy is seen: the call it allowed is denied.
    return [
        *cases,
        Case(
            KARPENTER_ROLE,
            KARPENTER_CALLS,
            "create-fleet-instance",
            DENIED,
            "AllowScopedEC2InstanceActionsWithTags",
        ),
        Case(HANDLER_ROLE, HANDLER_CALLS, "tag-asg", DENIED, "autoscaling:CreateOrUpdateTags"),
        # Without the app's key statement the default key policy alone allows nothing.
        Case(
            AUTO_MODE_CLUSTER_ROLE, AUTO_MODE_KMS_CALLS, "volume-key-decrypt", DENIED, "kms:Decrypt"
        ),
        Case(
            HANDLER_KEY_GRANT_ROLE,
            KEY_GRANT_CALLS,
            "grant-key-to-auto-scaling",
            DENIED,
            "kms:CreateGrant",
        ),
    ]


CASES = _cases()
POOL_TAG_CASES = [
    Case(AUTO_MODE_CLUSTER_ROLE, AUTO_MODE_POOL_TAG, n, ALLOWED) for n in AUTO_MODE_POOL_TAG
]


@cache
def _template(name: str) -> dict[str, Any]:
    if name == "pipeline":
        return deployed_in(example_pipeline_template(), Environment(account=PIPELINE_ACCOUNT))
    if name == "pipeline-cluster":
        return deployed_in(
            example_cluster_template(PIPELINE_CLUSTER), Environment(account=PIPELINE_ACCOUNT)
        )
    if name in IN_PARTITION:
        env = Environment(partition=name, region=PARTITION_REGIONS[name])
        template = deployed_in(synth(IN_PARTITION[name]).to_json(), env)
    else:
        template = synth(TEMPLATES[name]).to_json()
    (cluster,) = (r for r in template["Resources"].values() if r["Type"] == "AWS::EKS::Cluster")
    assert cluster["Properties"]["Name"] == CLUSTER
    return template


def _identity_request(case: Case) -> dict[str, Any]:
    template = _template(case.role.template)
    env = environment_of(template)
    role = role_id(template, case.role.name)
    policies: list[Policy] = role_policies(template, role)
    if case.drop:
        policies = without_statement(policies, case.drop)
    call = case.calls[case.call]
    return identity_request(
        session_principal(physical_name(template, role), env=env),
        policies,
        _in_environment(call if isinstance(call, Call) else call(template), env),
        env,
    )


def _in_environment(call: Call, env: Environment) -> Call:
    """`call` as made in `env`'s partition and Region: its ARNs, Region names and the
    Region-scoped condition values of the commercial case, in `env`'s."""
    if (env.partition, env.region) == (PARTITION, REGION):
        return call
    text = json.dumps([call.resource, call.context, call.resource_policy])
    text = text.replace(f"arn:{PARTITION}:", f"arn:{env.partition}:").replace(REGION, env.region)
    resource, context, resource_policy = json.loads(text)
    return replace(call, resource=resource, context=context, resource_policy=resource_policy)


def _assume_actions(role: Role) -> list[str]:
    return ["sts:AssumeRole", *(["sts:TagSession"] if role.tags_session else [])]


def _assume_request(role: Role, action: str) -> dict[str, Any]:
    template = _template(role.template)
    env = environment_of(template)
    lid = role_id(template, role.name)
    trust = trust_policy(template, lid)
    if role.assumer is None:
        return assume_request(role.service, arn_of(template, lid), trust, action, env)
    # A session of the assumer: its policies, and aws:PrincipalArn its role's ARN (IAM user
    # guide, global condition keys).
    caller = _template(role.assumer.template)
    caller_id = role_id(caller, role.assumer.name)
    request = assume_request(
        session_principal(physical_name(caller, caller_id), env=env),
        arn_of(template, lid),
        trust,
        action,
        env,
        {"aws:PrincipalArn": arn_of(caller, caller_id)},
    )
    request["identityPolicies"] = [
        {"name": n, "policy": d} for n, d in role_policies(caller, caller_id)
    ]
    return request


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Any]]:
    """Every case's outcome, by id, from one run of the simulator in the test run (its cases
    can run on both xdist workers: tests/support/run_cache.py)."""
    return shared_json("iam-simulation-outcomes", _simulate_every_case)[0]


def _simulate_every_case() -> dict[str, dict[str, Any]]:
    requests = {case.id: _identity_request(case) for case in [*CASES, *POOL_TAG_CASES]}
    requests |= {
        f"{role.template}/{role.name}/trust/{action}": _assume_request(role, action)
        for role in ROLES
        for action in _assume_actions(role)
    }
    return dict(zip(requests, simulate(list(requests.values())), strict=True))


def _outcome(outcomes: dict[str, dict[str, Any]], case_id: str) -> dict[str, Any]:
    outcome = outcomes[case_id]
    # A context key that does not apply to the action would be dropped before evaluation: the
    # case would not test what it says.
    assert outcome["result"] != "Error", outcome["errors"]
    assert outcome["ignoredContextKeys"] == [], outcome
    return outcome


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_each_component_call_is_allowed_and_nothing_beyond_it(case, outcomes):
    outcome = _outcome(outcomes, case.id)
    assert outcome["result"] == case.expected, outcome


@pytest.mark.parametrize("case", POOL_TAG_CASES, ids=lambda c: c.id)
def test_auto_mode_launches_with_the_node_class_pool_tag(case, outcomes):
    outcome = _outcome(outcomes, case.id)
    assert outcome["result"] == ALLOWED, outcome


@pytest.mark.parametrize(
    ("role", "action"),
    [(role, action) for role in ROLES for action in _assume_actions(role)],
    ids=lambda v: v.name if isinstance(v, Role) else v,
)
def test_each_role_trusts_the_service_that_assumes_it(role, action, outcomes):
    """Pod Identity and Auto Mode tag their sessions, so their roles must also trust
    sts:TagSession (EKS user guide, pod-id-role.adoc and auto-cluster-iam-role.adoc)."""
    outcome = _outcome(outcomes, f"{role.template}/{role.name}/trust/{action}")
    assert outcome["result"] == ALLOWED, outcome


# Every settings set the session fixtures synthesize (tests/conftest.py), and the CloudWatch one.
COVERAGE = {
    "default": DEFAULT,
    "multi": MULTI,
    "three-pools": THREE_POOLS,
    "karpenter": KARPENTER,
    "mixed": MIXED,
    "training": TRAINING,
    "karpenter-operator": KARPENTER_OPERATOR,
    "auto-mode": AUTO_MODE,
    "mixed-auto-mode": MIXED_AUTO_MODE,
    "existing": EXISTING,
    "cloudwatch": CLOUDWATCH_METRICS,
    "node-group-kms": NODE_GROUP_KMS,
}


@pytest.mark.parametrize("name", COVERAGE)
def test_every_role_of_the_app_is_simulated_or_named_as_not_used_by_gpu_pool(name):
    """A role is covered by its construct's id (the one simulated, with other settings' cluster
    name or Region in its policies), or, for a role named after its pool, by having the
    policies and trust of a simulated role; any other must be in NOT_SIMULATED."""
    template: dict[str, Any] = synth(COVERAGE[name]).to_json()
    named = {r.name for r in ROLES} | set(NOT_SIMULATED)
    uncovered = [
        lid
        for lid, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Role"
        and lid[:-8] not in named
        and _grants(template, lid) not in _simulated_grants()
    ]
    assert uncovered == []


def _grants(template: dict[str, Any], role: str) -> tuple[Any, Any]:
    return role_policies(template, role), trust_policy(template, role)


@cache
def _simulated_grants() -> list[tuple[Any, Any]]:
    return [_grants(t, role_id(t, r.name)) for r in ROLES for t in [_template(r.template)]]


@pytest.mark.parametrize("partition", IN_PARTITION)
def test_a_stack_in_another_partition_names_every_arn_in_that_partition(partition):
    """No ARN hard-codes the aws partition (a China or GovCloud deploy would name resources
    that do not exist there), and every AWS managed policy is the partition's own:
    arn:<partition>:iam::aws:policy/... once deployed."""
    template = _template(partition)
    assert "arn:aws:" not in json.dumps(template["Resources"])
    arns = [
        arn
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Role"
        for arn in resolve(template, r["Properties"].get("ManagedPolicyArns", []))
    ]
    assert arns
    assert [a for a in arns if not a.startswith(f"arn:{partition}:iam::aws:policy/")] == []
