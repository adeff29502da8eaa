"""Guardrails for a customer managed key on node group and Karpenter pools
(`volume_kms_key_arn`): what the app can make work, and what it cannot (model/volume_keys.py).
The app gives EC2 Auto Scaling's service-linked role a grant on the key and Karpenter's
controller the key's use, both by the key's ARN. Auto Mode pools have their own rules
(checks/auto_mode.py, GP-AUTO-13)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.volume_keys import KEY_ARN, account_key_policy
from gpu_pool.plan.pool import PoolPlan


def check_volume_key(plan: PoolPlan) -> Iterator[Finding]:
    """A key named by an alias: IAM policies and grants name a key by its ARN."""
    key = plan.settings.volume_kms_key_arn
    if key is None or plan.auto_mode is not None or KEY_ARN.match(key):
        return
    launcher = (
        "Karpenter's controller launches"
        if plan.karpenter is not None
        else "EC2 Auto Scaling launches the node groups' nodes"
    )
    yield error(
        "GP-KEY-01",
        f"{plan.setting}.volume_kms_key_arn",
        f"'{key}' is an alias; {launcher} with the key only once allowed to use it, and the "
        "app allows that by the key's ARN (a grant and an IAM policy name a key, not an "
        "alias): give the key's ARN (aws kms describe-key --key-id <the alias ARN> --query "
        "KeyMetadata.Arn)",
    )


def check_key_account(plan: PoolPlan, account: str | None) -> Iterator[Finding]:
    """A key of another account than the stack's (`account`, None: unknown): its key policy,
    which the app cannot change, must let this account use it and create grants. Only the
    construct knows the stack's account, so it runs this rule."""
    key = plan.settings.volume_kms_key_arn
    match = KEY_ARN.match(key or "")
    if match is None or plan.auto_mode is not None or account in (None, match["account"]):
        return
    statements = account_key_policy(match["partition"], str(account))
    yield warning(
        "GP-KEY-02",
        f"{plan.setting}.volume_kms_key_arn",
        f"the key is in account {match['account']}, the pool in {account}: unless the key's "
        "policy has these statements (EC2 Auto Scaling user guide, 'Required AWS KMS key "
        "policy for use with encrypted volumes'), the app cannot grant it to EC2 Auto "
        "Scaling's service-linked role or Karpenter and no node of the pool launches: "
        f"{json.dumps(statements, separators=(',', ':'))}",
    )
