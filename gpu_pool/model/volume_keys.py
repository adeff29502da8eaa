"""Who must be allowed to use a customer managed KMS key that encrypts a pool's node volumes
(`volume_kms_key_arn`), for node groups and Karpenter. Auto Mode's are in auto_mode_api.py.

- Node groups: EKS launches their nodes through an Auto Scaling group, and EC2 Auto Scaling
  launches as its service-linked role AWSServiceRoleForAutoScaling, whose own permissions cover
  AWS managed keys only: with a customer managed key and no more, each node terminates right
  after launch. The key policy must allow that role, or a grant must give it the key (EC2 Auto
  Scaling user guide, "Required AWS KMS key policy for use with encrypted volumes": the key
  policy statements, and for a key of another account the grant's operations).
- Karpenter launches with CreateFleet as its controller role, which then needs the key too
  (Karpenter troubleshooting, "Node terminates before ready on failed encrypted EBS volume":
  the actions, through EC2 only).
"""

from __future__ import annotations

import re
from typing import Any

# A key's ARN: IAM policies and grants name a key by it, never by an alias (KMS API reference,
# CreateGrant KeyId: "Specify the key ID or key ARN of the KMS key").
KEY_ARN = re.compile(r"^arn:(?P<partition>aws[a-z-]*):kms:[a-z0-9-]+:(?P<account>[0-9]{12}):key/")

# EC2 Auto Scaling's default service-linked role, the one EKS's node group ASGs launch as (EC2
# Auto Scaling user guide, "Service-linked roles for Amazon EC2 Auto Scaling").
AUTOSCALING_SERVICE = "autoscaling.amazonaws.com"
AUTOSCALING_ROLE_PATH = f"aws-service-role/{AUTOSCALING_SERVICE}/AWSServiceRoleForAutoScaling"

# The grant that gives the service-linked role the key, as the Auto Scaling user guide creates
# it (Example 2, `aws kms create-grant --operations ...`).
GRANT_OPERATIONS = (
    "Encrypt",
    "Decrypt",
    "ReEncryptFrom",
    "ReEncryptTo",
    "GenerateDataKey",
    "GenerateDataKeyWithoutPlaintext",
    "DescribeKey",
    "CreateGrant",
)

# The key policy statements of the same guide (Example 1) for the service-linked role.
KEY_USE_ACTIONS = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:DescribeKey",
)

# Karpenter's controller: the troubleshooting page's actions, allowed only through EC2.
KARPENTER_KEY_ACTIONS = (*KEY_USE_ACTIONS, "kms:CreateGrant")


def autoscaling_role_arn(partition: str, account: str) -> str:
    """The ARN of EC2 Auto Scaling's service-linked role in `account`."""
    return f"arn:{partition}:iam::{account}:role/{AUTOSCALING_ROLE_PATH}"


def key_account(key: str) -> str | None:
    """The account of a key given by its ARN; None for an alias ARN."""
    match = KEY_ARN.match(key)
    return match["account"] if match else None


def account_key_policy(partition: str, account: str) -> list[dict[str, Any]]:
    """The statements a key of another account needs in its key policy before `account` can
    create the service-linked role's grant and Karpenter's controller can use it: the guide's
    Example 2, for `account`."""
    principal = {"AWS": f"arn:{partition}:iam::{account}:root"}
    return [
        {
            "Effect": "Allow",
            "Principal": principal,
            "Action": list(KEY_USE_ACTIONS),
            "Resource": "*",
        },
        {"Effect": "Allow", "Principal": principal, "Action": ["kms:CreateGrant"], "Resource": "*"},
    ]
