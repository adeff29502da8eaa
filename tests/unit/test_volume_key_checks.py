"""The rules on a node group or Karpenter pool's customer key (checks/volume_key.py): an alias
is refused (IAM policies and KMS grants name a key by its ARN: KMS API reference, CreateGrant
KeyId), and a key of another account is named with the key policy statements its owner must
add (EC2 Auto Scaling user guide, "Required AWS KMS key policy for use with encrypted volumes",
Example 2, for this account)."""

from __future__ import annotations

import pytest

from gpu_pool.checks.volume_key import check_key_account, check_volume_key
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings
from tests.support import rules

KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_ACCOUNT_KEY = KEY.replace("123456789012", "444455556666")
ALIAS = "arn:aws:kms:us-east-1:123456789012:alias/gpu-volumes"
DESCRIBE = (
    "give the key's ARN (aws kms describe-key --key-id <the alias ARN> --query KeyMetadata.Arn)"
)


def _plan(provisioner, key):
    return plan_pool(PoolSettings(provisioner=provisioner, volume_kms_key_arn=key))


ALIAS_CASES = {
    "node-groups-alias": (
        "cluster-autoscaler",
        ALIAS,
        [
            (
                "GP-KEY-01",
                f"pool.volume_kms_key_arn: '{ALIAS}' is an alias; EC2 Auto Scaling launches the "
                "node groups' nodes with the key only once allowed to use it, and the app "
                "allows that by the key's ARN (a grant and an IAM policy name a key, not an "
                f"alias): {DESCRIBE}",
            )
        ],
    ),
    "karpenter-alias": (
        "karpenter",
        ALIAS,
        [
            (
                "GP-KEY-01",
                f"pool.volume_kms_key_arn: '{ALIAS}' is an alias; Karpenter's controller "
                "launches with the key only once allowed to use it, and the app allows that by "
                f"the key's ARN (a grant and an IAM policy name a key, not an alias): {DESCRIBE}",
            )
        ],
    ),
    "node-groups-key-arn": ("cluster-autoscaler", KEY, []),
    "karpenter-key-arn": ("karpenter", KEY, []),
    "no-key": ("cluster-autoscaler", None, []),
    # Auto Mode's key is its cluster role's (GP-AUTO-13).
    "auto-mode-alias": ("auto-mode", ALIAS, []),
}


@pytest.mark.parametrize(
    ("provisioner", "key", "expected"), ALIAS_CASES.values(), ids=ALIAS_CASES.keys()
)
def test_an_alias_is_refused_where_the_app_grants_the_key(provisioner, key, expected):
    found = rules.documented(check_volume_key(_plan(provisioner, key)))
    assert [(f.rule, str(f)) for f in found] == expected


ACCOUNT = "123456789012"
# Example 2's two statements, for the pool's account.
OTHER_ACCOUNT_POLICY = (
    '[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:root"},"Action":'
    '["kms:Encrypt","kms:Decrypt","kms:ReEncrypt*","kms:GenerateDataKey*","kms:DescribeKey"],'
    '"Resource":"*"},{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:root"},'
    '"Action":["kms:CreateGrant"],"Resource":"*"}]'
)
OTHER_ACCOUNT = (
    "GP-KEY-02",
    "pool.volume_kms_key_arn: the key is in account 444455556666, the pool in 123456789012: "
    "unless the key's policy has these statements (EC2 Auto Scaling user guide, 'Required AWS "
    "KMS key policy for use with encrypted volumes'), the app cannot grant it to EC2 Auto "
    "Scaling's service-linked role or Karpenter and no node of the pool launches: "
    f"{OTHER_ACCOUNT_POLICY}",
)
ACCOUNT_CASES = {
    "other-account": ("cluster-autoscaler", OTHER_ACCOUNT_KEY, ACCOUNT, [OTHER_ACCOUNT]),
    "karpenter-other-account": ("karpenter", OTHER_ACCOUNT_KEY, ACCOUNT, [OTHER_ACCOUNT]),
    "same-account": ("cluster-autoscaler", KEY, ACCOUNT, []),
    "environment-agnostic-stack": ("cluster-autoscaler", OTHER_ACCOUNT_KEY, None, []),
    "alias": ("cluster-autoscaler", ALIAS, ACCOUNT, []),
    "auto-mode": ("auto-mode", OTHER_ACCOUNT_KEY, ACCOUNT, []),
}  # fmt: skip


@pytest.mark.parametrize(
    ("provisioner", "key", "account", "expected"),
    ACCOUNT_CASES.values(),
    ids=ACCOUNT_CASES.keys(),
)
def test_a_key_of_another_account_names_the_statements_its_owner_must_add(
    provisioner, key, account, expected
):
    found = rules.documented(check_key_account(_plan(provisioner, key), account))
    assert [(f.rule, str(f)) for f in found] == expected
    assert not any(f.error for f in found)
