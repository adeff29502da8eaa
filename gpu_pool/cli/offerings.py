"""The answer to the app's instance type offerings lookup: the zones of the stack's Region that
offer an instance type (EC2 DescribeInstanceTypeOfferings, location type availability-zone).

The CDK CLI asks the project's context provider plugin (cdk-plugin/index.js), which runs this
module (`python3 -m gpu_pool.cli.offerings`) with the lookup's props as JSON on stdin: account,
region, instanceType and lookupRoleArn. It prints the zone names as a JSON list; on a failure it
prints one line on stderr and exits 1, which the plugin hands to the CLI as the lookup's error.

The CLI gives a plugin none of its credentials (aws-cdk PluginHost.registerContextProviderAlpha:
plugins "cannot reuse the CDK's authentication mechanisms"): boto3's chain gives them
(environment, AWS_PROFILE, SSO, instance role). As the CLI does for its own lookups, the stack's
bootstrap lookup role is assumed, and base credentials that cannot assume it are used only when
they are the stack's account: zone names map to physical zones per account (EC2 UG, "Availability
Zone IDs"), so another account's answer would be wrong.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import boto3
import botocore
from botocore.exceptions import BotoCoreError, ClientError

_SESSION_NAME = "gpu-pool-offerings-lookup"


class LookupFailed(Exception):
    """Why the zones could not be read; the CLI shows it as the stack's error."""


def zones_offering(session: Any, instance_type: str) -> list[str]:
    """The zones of `session`'s Region that offer `instance_type`, sorted; empty: none."""
    ec2 = session.client("ec2")
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    )
    return sorted({o["Location"] for page in pages for o in page["InstanceTypeOfferings"]})


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
            f"the credentials are for account {own}{tried}; zone names differ between "
            f"accounts: use credentials of account {account}"
        )
    return base


def main() -> int:
    props = json.loads(sys.stdin.read())
    instance_type, region, account = props["instanceType"], props["region"], props["account"]
    try:
        session = lookup_session(account, region, props.get("lookupRoleArn"))
        zones = zones_offering(session, instance_type)
    except (LookupFailed, ClientError, BotoCoreError) as err:
        print(
            f"gpu-pool: cannot look up the zones of {region} that offer {instance_type} for "
            f"account {account}: {str(err).rstrip('.')}",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(zones))
    return 0


if __name__ == "__main__":
    sys.exit(main())
