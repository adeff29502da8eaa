"""The AWS session a context provider plugin's lookup runs in (cdk-plugin/index.js runs
gpu_pool/lookups/offerings.py, quotas.py and eks_cluster.py).

The CLI gives a plugin none of its credentials (aws-cdk PluginHost.registerContextProviderAlpha:
plugins "cannot reuse the CDK's authentication mechanisms"): boto3's chain gives them
(environment, AWS_PROFILE, SSO, instance role). As the CLI does for its own lookups, the stack's
bootstrap lookup role is assumed, and base credentials that cannot assume it are used only when
they are the stack's account: zone names map to physical zones per account (EC2 UG, "Availability
Zone IDs") and quotas are the account's, so another account's answer would be wrong.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import boto3
import botocore
from botocore.exceptions import BotoCoreError, ClientError

_SESSION_NAME = "gpu-pool-lookup"


class LookupFailed(Exception):
    """Why a lookup could not be answered; the CLI hands it to the app as the lookup's error."""


def lookup_session(account: str, region: str, role_arn: str | None) -> Any:
    """A boto3 session for `account` in `region`: the lookup role's, else the base credentials
    when they are the account's."""
    base = boto3.Session(region_name=region)
    partitions = base.get_available_partitions()
    if not any(region in base.get_available_regions("ec2", p) for p in partitions):
        raise LookupFailed(
            f"'{region}' is not a Region of botocore {botocore.__version__}'s endpoint data: "
            "check the stack's region (or update botocore, if the Region is new)"
        )
    if base.get_credentials() is None:
        raise LookupFailed(
            f"no AWS credentials (environment, AWS_PROFILE or ~/.aws) for account {account}; "
            "the CDK CLI's --profile does not reach context provider plugins: set AWS_PROFILE"
        )
    if role_arn:
        try:
            granted = base.client("sts").assume_role(
                RoleArn=role_arn, RoleSessionName=_SESSION_NAME
            )["Credentials"]
        except ClientError:
            pass  # as the CLI: the base credentials, if they are the account's (below)
        else:
            return boto3.Session(
                aws_access_key_id=granted["AccessKeyId"],
                aws_secret_access_key=granted["SecretAccessKey"],
                aws_session_token=granted["SessionToken"],
                region_name=region,
            )
    own = base.client("sts").get_caller_identity()["Account"]
    if own != account:
        tried = f" and cannot assume {role_arn}" if role_arn else ""
        raise LookupFailed(
            f"the credentials are for account {own}{tried}; zone names and quotas differ "
            f"between accounts: use credentials of account {account}"
        )
    return base


def answer_lookup(
    what: Callable[[dict[str, Any]], str], look_up: Callable[[Any, dict[str, Any]], Any]
) -> int:
    """Answer the plugin's lookup: its props as JSON on stdin (account, region, lookupRoleArn
    and the lookup's own), `look_up(session, props)` in the account's session, its answer as
    JSON on stdout; a failure as one line on stderr naming `what(props)`, and exit 1, which the
    plugin hands to the CLI as the lookup's error."""
    props = json.loads(sys.stdin.read())
    try:
        session = lookup_session(props["account"], props["region"], props.get("lookupRoleArn"))
        answer = look_up(session, props)
    except (LookupFailed, ClientError, BotoCoreError) as err:
        print(
            f"gpu-pool: cannot look up {what(props)} for account {props['account']}: "
            f"{str(err).rstrip('.')}",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(answer))
    return 0
