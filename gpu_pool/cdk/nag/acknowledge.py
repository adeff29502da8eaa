"""cdk-nag's AwsSolutions pack, and the findings this design accepts, each with its reason.

Every acknowledgment names one exact finding (a managed policy by name, a wildcard resource by
its value), so a new managed policy or a new wildcard anywhere in the stack still fails the synth.
Each construct acknowledges its own resources' findings, so a library user who adds
AwsSolutionsChecks to their app sees none from gpu-pool; findings on their own resources (their
cluster's roles, say) stay theirs to judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
import cdk_nag
from aws_cdk import aws_iam as iam
from constructs import IConstruct

_POLICY_PREFIX = ":iam::aws:policy/"

# AWS managed policies in a gpu-pool stack: EKS documents these for its cluster, node and Lambda
# roles, and AWS keeps them current with the services.
MANAGED_POLICY_REASONS = {
    "AmazonEKSClusterPolicy": "the cluster role policy EKS requires (aws-cdk-lib's Cluster)",
    "AmazonEKSWorkerNodePolicy": "the node role policy EKS requires for managed node groups",
    # EKS Auto Mode (EKS user guide, automode/auto-learn-iam.adoc): the cluster role's four, which
    # aws-cdk-lib's Cluster adds with Auto Mode compute, and the Auto Mode node role's.
    "AmazonEKSComputePolicy": "the cluster role policy EKS Auto Mode requires to launch nodes",
    "AmazonEKSBlockStoragePolicy": "the cluster role policy EKS Auto Mode requires for volumes",
    "AmazonEKSLoadBalancingPolicy": (
        "the cluster role policy EKS Auto Mode requires for load balancers"
    ),
    "AmazonEKSNetworkingPolicy": "the cluster role policy EKS Auto Mode requires for networking",
    "AmazonEKSWorkerNodeMinimalPolicy": "the node role policy EKS documents for Auto Mode nodes",
    "AmazonEKS_CNI_Policy": "the VPC CNI on every node needs it to attach pod ENIs",
    "AmazonEC2ContainerRegistryPullOnly": "GPU nodes pull EKS add-on images from ECR, nothing more",
    "AmazonEC2ContainerRegistryReadOnly": (
        "aws-cdk-lib's system node group and kubectl handler read ECR images"
    ),
    "AmazonElasticContainerRegistryPublicReadOnly": (
        "aws-cdk-lib's kubectl handler, only when a chart comes from public ECR"
    ),
    "service-role/AWSLambdaBasicExecutionRole": "the custom-resource Lambdas write their own logs",
    "CloudWatchAgentServerPolicy": (
        "the CloudWatch add-on's agent (metrics.gpu: cloudwatch), as its user guide prescribes"
    ),
    "service-role/AWSLambdaVPCAccessExecutionRole": (
        "aws-cdk-lib's kubectl handler runs in the cluster's VPC"
    ),
}


def apply_aws_solutions(app: cdk.App) -> None:
    """Validate every stack in the app against the AwsSolutions pack and gpu-pool's own rules
    (nag_rules.py) at synth."""
    from gpu_pool.cdk.nag.rules import GpuPoolNagPack

    cdk.Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(app), GpuPoolNagPack(app))


def acknowledge(scope: IConstruct, finding: str, reason: str, plugin: str = "AwsSolutions") -> None:
    """Accept one finding of a rule pack (`plugin`: its name) on `scope`, with the reason."""
    acknowledge_all(scope, {finding: reason}, plugin)


def acknowledge_all(
    scope: IConstruct, reasons: Mapping[str, str], plugin: str = "AwsSolutions"
) -> None:
    """Accept several findings of one rule pack on `scope` ({finding: reason}), in one call
    into aws-cdk-lib: each call crosses to its Node.js process, and a stack acknowledges
    hundreds."""
    if reasons:
        cdk.Validations.of(scope).acknowledge(
            *(cdk.Acknowledgment(id=f"{plugin}::{f}", reason=r) for f, r in reasons.items())
        )


def nag_form(value: Any) -> str:
    """A resolved value as cdk-nag spells it in finding ids: `<Ref>`, `<Id.Attr>`, else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::GetAtt":
            return f"<{argument[0]}.{argument[1]}>"
        if function == "Fn::Join" and all(isinstance(p, str | dict) for p in argument[1]):
            separator: str = argument[0]
            return separator.join(nag_form(p) for p in argument[1])
    return json.dumps(value, separators=(",", ":"))


def acknowledge_managed_policies(scope: IConstruct) -> None:
    """Acknowledge IAM4 for the managed policies listed above, wherever a role under `scope`
    (a construct's own roles: each construct acknowledges what it creates) uses them."""
    stack = cdk.Stack.of(scope)
    for construct in scope.node.find_all():
        if not isinstance(construct, iam.CfnRole):
            continue
        reasons = {}
        for arn in stack.resolve(construct.managed_policy_arns) or []:
            name = json.dumps(arn).split(_POLICY_PREFIX, 1)[-1].split('"', 1)[0]
            reason = MANAGED_POLICY_REASONS.get(name)
            if reason:
                reasons[f"AwsSolutions-IAM4[Policy::{nag_form(arn)}]"] = reason
        acknowledge_all(construct, reasons)


def acknowledge_wildcard_resources(policy: IConstruct, reason: str) -> None:
    """Acknowledge IAM5 for each wildcard resource in one policy's (inline or managed)
    statements."""
    cfn_policy = (
        policy.node.default_child if isinstance(policy, iam.Policy | iam.ManagedPolicy) else policy
    )
    if not isinstance(cfn_policy, iam.CfnPolicy | iam.CfnManagedPolicy):
        raise TypeError(f"{policy.node.path} is not an IAM policy")
    document = cdk.Stack.of(policy).resolve(cfn_policy.policy_document)
    findings = {}
    for statement in document["Statement"]:
        resources = statement.get("Resource", [])
        for resource in resources if isinstance(resources, list) else [resources]:
            form = nag_form(resource)
            if "*" in form:
                findings[f"AwsSolutions-IAM5[Resource::{form}]"] = reason
    acknowledge_all(policy, findings)


def acknowledge_provider_framework(scope: IConstruct, framework: IConstruct, owner: str) -> None:
    """Findings inside an aws-cdk-lib provider, which this project does not write: the Lambda
    runtimes under `scope` (aws-cdk-lib picks them) and the wildcard with which the framework's
    onEvent function (`framework`) may invoke the handler and its versions."""
    acknowledge(
        scope,
        "AwsSolutions-L1",
        f"{owner}'s Lambda runtime is chosen by aws-cdk-lib (pinned in requirements.txt); "
        "upgrading aws-cdk-lib moves it",
    )
    acknowledge_wildcard_resources(
        framework.node.find_child("ServiceRole").node.find_child("DefaultPolicy"),
        "aws-cdk-lib's provider framework invokes its own handler function and its versions",
    )
