"""A customer managed key for node group and Karpenter pools' volumes, made usable by whoever
launches the nodes (model/volume_keys.py): EC2 Auto Scaling's service-linked role through a
grant, Karpenter's controller through its own policy. Both name the key by its ARN; an alias
is refused (GP-KEY-01), and a key of another account needs its owner's key policy (GP-KEY-02).

The grant: CloudFormation has no KMS grant resource, and a key policy is its owner's (an
imported key's is not the app's to rewrite), so a `Custom::GpuPoolVolumeKeyGrant`, served by
the stack's node group handler, creates it with CreateGrant. Grants are the mechanism the EC2
Auto Scaling user guide gives for a key the ASG's own account cannot put in a key policy, and
the same CreateGrant works for a key of the stack's account: KMS's default key policy lets IAM
policies of the account allow it ("Enable IAM User Permissions"). The handler's role may create
only this grant (grantee the service-linked role, the guide's operations) and revoke grants on
the key. One grant per stack and key; the node groups wait for it.
"""

from __future__ import annotations

import hashlib

from aws_cdk import CustomResource, Stack, Token
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.nag.acknowledge import acknowledge
from gpu_pool.model.volume_keys import (
    AUTOSCALING_SERVICE,
    GRANT_OPERATIONS,
    KARPENTER_KEY_ACTIONS,
    autoscaling_role_arn,
)

RESOURCE_TYPE = "Custom::GpuPoolVolumeKeyGrant"


def grant_to_auto_scaling(
    scope: Construct, key_arn: str, handler_role: iam.Role, service_token: str
) -> CustomResource:
    """The stack's grant of `key_arn` to EC2 Auto Scaling's service-linked role, created on
    first use, by the stack's node group handler (its role and service token)."""
    stack = Stack.of(scope)
    construct_id = f"GpuPoolVolumeKeyGrant{_digest(key_arn)}"
    existing = stack.node.try_find_child(construct_id)
    if isinstance(existing, CustomResource):
        return existing
    grantee = autoscaling_role_arn(stack.partition, stack.account)
    policy = iam.Policy(
        handler_role,
        f"KeyGrant{_digest(key_arn)}",
        statements=grant_statements(key_arn, grantee),
    )
    handler_role.attach_inline_policy(policy)
    grant = CustomResource(
        stack,
        construct_id,
        service_token=service_token,
        resource_type=RESOURCE_TYPE,
        properties={
            "KeyArn": key_arn,
            "GranteePrincipal": grantee,
            "Operations": list(GRANT_OPERATIONS),
        },
    )
    grant.node.add_dependency(policy)
    return grant


def grant_statements(key_arn: str, grantee: str) -> list[iam.PolicyStatement]:
    """Create the service-linked role (the grant needs it to exist: an account with no ASG yet
    has none) and its grant on the key, with these operations only; revoke grants on the key
    (the grant's Delete)."""
    return [
        iam.PolicyStatement(
            actions=["iam:CreateServiceLinkedRole"],
            resources=[grantee],
            conditions={"StringEquals": {"iam:AWSServiceName": AUTOSCALING_SERVICE}},
        ),
        iam.PolicyStatement(
            actions=["kms:CreateGrant"],
            resources=[key_arn],
            conditions={
                "StringEquals": {"kms:GranteePrincipal": grantee},
                "ForAllValues:StringEquals": {"kms:GrantOperations": list(GRANT_OPERATIONS)},
            },
        ),
        iam.PolicyStatement(actions=["kms:RevokeGrant"], resources=[key_arn]),
    ]


def allow_karpenter(controller_role: iam.Role, key_arn: str) -> iam.Policy:
    """Karpenter's controller may use `key_arn` through EC2 (its launches encrypt the nodes'
    volumes with it); one policy per role and key."""
    policy_id = f"VolumeKey{_digest(key_arn)}"
    existing = controller_role.node.try_find_child(policy_id)
    if isinstance(existing, iam.Policy):
        return existing
    stack = Stack.of(controller_role)
    policy = iam.Policy(
        controller_role,
        policy_id,
        statements=[
            iam.PolicyStatement(
                actions=list(KARPENTER_KEY_ACTIONS),
                resources=[key_arn],
                conditions={
                    "StringEquals": {
                        # The partition's own domain: amazonaws.com.cn in China (KMS
                        # developer guide, kms:ViaService).
                        "kms:ViaService": f"ec2.{stack.region}.{stack.url_suffix}"
                    }
                },
            )
        ],
    )
    controller_role.attach_inline_policy(policy)
    for action in ("kms:ReEncrypt*", "kms:GenerateDataKey*"):
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Action::{action}]",
            "Karpenter's troubleshooting page names these action families (EBS re-encrypts and "
            "makes data keys for the volumes), on the one key and through EC2 only",
        )
    return policy


def stack_account(scope: Construct) -> str | None:
    """The account of `scope`'s stack; None for an environment-agnostic stack."""
    account = Stack.of(scope).account
    return None if Token.is_unresolved(account) else account


def _digest(key_arn: str) -> str:
    return hashlib.sha256(key_arn.encode()).hexdigest()[:8]
