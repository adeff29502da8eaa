"""cdk-nag: the findings of a CDK Pipelines pipeline that gpu-pool accepts, each with its reason.

Every one is in what aws-cdk-lib's pipelines module generates (roles, artifact buckets), each
acknowledged by its exact finding id; a wildcard this table does not know stays a finding, so
a new one fails the synth until someone judges it.
"""

from __future__ import annotations

import re

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import pipelines
from constructs import IConstruct

from gpu_pool.cdk.nag.acknowledge import acknowledge, acknowledge_all, nag_form

_ARTIFACTS = "the pipeline's own artifact buckets and keys (one per Region it deploys to)"
_PROJECT_OWN = (
    "a CodeBuild project's own log group and report groups, which aws-cdk-lib's Project names "
    "after the project"
)

# Wildcards in what CDK Pipelines generates: the finding (as cdk-nag spells it) -> why. ARNs
# carry the partition as a token, or literally when the app's feature flags resolve it
# (cdk.json's @aws-cdk/core flags; e.g. `arn:aws:` for a stack with a known Region).
_WILDCARD_REASONS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"^Action::s3:(GetObject|GetBucket|List|DeleteObject|Abort)\*$"),
        f"aws-cdk-lib's read/write grant on {_ARTIFACTS}",
    ),
    (
        re.compile(r"^Action::kms:(ReEncrypt|GenerateDataKey)\*$"),
        f"aws-cdk-lib's encrypt/decrypt grant on {_ARTIFACTS}",
    ),
    (
        # The replication buckets' generated names start with their support stack's name,
        # `<pipeline stack>-support-<region>`, lowercase and cut short.
        re.compile(
            r"^Resource::(<Pipeline\w*ArtifactsBucket\w*\.Arn>|arn:(?:<AWS::Partition>|aws[a-z-]*):s3:::"
            r"[a-z0-9.-]+-support-[a-z0-9.-]+)/\*$"
        ),
        f"the objects of {_ARTIFACTS}",
    ),
    (
        re.compile(
            r"^Resource::arn:(?:<AWS::Partition>|aws[a-z-]*):logs:[a-z0-9-]+:[0-9]{12}:log-group:"
            r"/aws/codebuild/<\w+>:\*$"
        ),
        _PROJECT_OWN,
    ),
    (
        re.compile(
            r"^Resource::arn:(?:<AWS::Partition>|aws[a-z-]*):codebuild:[a-z0-9-]+:[0-9]{12}:"
            r"report-group/<\w+>-\*$"
        ),
        _PROJECT_OWN,
    ),
    (
        re.compile(
            r"^Resource::arn:(?:<AWS::Partition>|aws[a-z-]*):(logs:[a-z0-9-]+:[0-9]{12}:log-group:"
            r"/aws/codebuild|codebuild:[a-z0-9-]+:[0-9]{12}:report-group)/\*$"
        ),
        "the asset publishing projects' logs and reports: CDK Pipelines shares one role among "
        "those projects, which it creates as assets need them",
    ),
    (
        re.compile(r"^Resource::arn:\*:iam::[0-9]{12}:role/\*$"),
        "self-mutation assumes the CDK bootstrap roles (deploy, file and image publishing), "
        "only those tagged aws-cdk:bootstrap-role (the statement's condition)",
    ),
]

# Statements on "*" in CDK Pipelines' roles, by their actions: why each cannot be narrower.
_ANY_RESOURCE_REASONS = {
    "kms:Decrypt": "the pipeline role uses the cross-Region artifact keys, which live in "
    "support stacks whose key ARNs aws-cdk-lib cannot reference",
    "cloudformation:DescribeStacks": "self-mutation reads the stacks of the app and lists "
    "the buckets of its bootstrap environments, which it only knows at run time",
    "codebuild:StartBuild": "the asset publishing role starts and watches the asset "
    "projects CDK Pipelines creates as assets need them",
}


def acknowledge_pipeline(pipeline: pipelines.CodePipeline) -> None:
    """Acknowledge the findings of what `pipeline` generates (call after build_pipeline):
    its artifact buckets' missing access logs and the IAM5 wildcards the table above knows,
    in its stack and in its cross-Region support stacks."""
    stacks: list[IConstruct] = [cdk.Stack.of(pipeline)]
    stacks += [support.stack for support in pipeline.pipeline.cross_region_support.values()]
    for scope in stacks:
        for construct in scope.node.find_all():
            if isinstance(construct, s3.CfnBucket):
                acknowledge(
                    construct,
                    "AwsSolutions-S1",
                    "a CDK Pipelines artifact bucket: only the pipeline's roles reach it, "
                    "through its key; CloudTrail data events, not a second bucket, audit it",
                )
            elif isinstance(construct, iam.CfnPolicy):
                _acknowledge_wildcards(construct)


def acknowledge_role_with_path(project: IConstruct) -> None:
    """CloudFormation Validate's E3050 on a CodeBuild project whose role has an IAM path: the
    rule warns of a role referenced by name (Ref), which would lose the path, but aws-cdk-lib's
    Project gives ServiceRole the role's ARN (Fn::GetAtt Arn), path included."""
    resource = project.node.default_child
    service_role = cdk.Stack.of(project).resolve(getattr(resource, "service_role", None))
    if isinstance(service_role, dict) and "Fn::GetAtt" in service_role:
        acknowledge(
            project,
            "E3050",
            "ServiceRole is the role's ARN (Fn::GetAtt Arn), path included, not a Ref to its name",
            plugin="CloudFormation-Validate",
        )


def _acknowledge_wildcards(policy: iam.CfnPolicy) -> None:
    document = cdk.Stack.of(policy).resolve(policy.policy_document)
    reasons = {
        f"AwsSolutions-IAM5[{finding}]": reason
        for finding, actions in _wildcards(document["Statement"]).items()
        if (reason := _reason(finding, actions)) is not None
    }
    acknowledge_all(policy, reasons)


def _wildcards(statements: list[dict[str, object]]) -> dict[str, list[str]]:
    """Each wildcard finding of a policy (as cdk-nag names it) -> the actions it covers."""
    found: dict[str, list[str]] = {}
    for statement in statements:
        actions = _as_list(statement.get("Action"))
        for action in actions:
            if "*" in action:
                found.setdefault(f"Action::{action}", []).append(action)
        for resource in _as_list(statement.get("Resource")):
            form = nag_form(resource)
            if "*" in form:
                found.setdefault(f"Resource::{form}", []).extend(actions)
    return found


def _reason(finding: str, actions: list[str]) -> str | None:
    if finding == "Resource::*":
        # Each action on "*" must be one the table explains, or the finding stays open.
        reasons = [_statement_reason(action) for action in actions]
        if None in reasons:
            return None
        return "; ".join(dict.fromkeys(r for r in reasons if r is not None))
    return next((reason for pattern, reason in _WILDCARD_REASONS if pattern.match(finding)), None)


# Actions that come with the keys of _ANY_RESOURCE_REASONS in CDK Pipelines' statements on "*".
_ON_ANY_RESOURCE = {
    "kms:Decrypt": ["kms:DescribeKey", "kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"],
    "cloudformation:DescribeStacks": ["s3:ListBucket"],
    "codebuild:StartBuild": ["codebuild:BatchGetBuilds", "codebuild:StopBuild"],
}


def _statement_reason(action: str) -> str | None:
    for first, others in _ON_ANY_RESOURCE.items():
        if action == first or action in others:
            return _ANY_RESOURCE_REASONS[first]
    return None


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [str(v) if isinstance(v, str) else nag_form(v) for v in items]
