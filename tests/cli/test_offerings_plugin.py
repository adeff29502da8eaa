"""The CDK CLI plugin that answers the instance type offerings lookup (cdk-plugin/index.js, which
runs gpu_pool/lookups/offerings.py), against moto's EC2 and STS on 127.0.0.1: its answer for a
Region and type, and its errors as the CLI receives them (the plugin's rejection, which the CLI
stores as the lookup's error and shows as the stack's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import moto.settings
import pytest
from botocore.exceptions import ClientError

from tests.support.paths import ROOT
from tests.support.plugin import NODE, PLUGIN, ask

ACCOUNT = "123456789012"  # moto's default account
LOOKUP_ROLE = f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-lookup-role-{ACCOUNT}-us-east-1"
OFFERINGS = "gpu-pool-instance-type-offerings"

pytestmark = pytest.mark.skipif(not NODE.exists(), reason="pinned Node.js not installed")


def _ask(props: dict, env: dict[str, str] | None = None, path: str | None = None) -> dict:
    """The plugin's answer to one lookup (`path`: the PATH it finds python3 on; default: this
    venv's first)."""
    environment = {
        **(env if env is not None else os.environ),
        "PATH": path or os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "PYTHONPATH": str(ROOT),
    }
    return ask(OFFERINGS, props, environment)


def _props(instance_type: str = "p5.48xlarge", region: str = "us-east-1", **more) -> dict:
    # As the CLI passes them: the lookup's props, the dummy value and the resolved role ARN.
    return {
        "account": ACCOUNT,
        "region": region,
        "pluginName": "gpu-pool-instance-type-offerings",
        "instanceType": instance_type,
        "dummyValue": ["dummy1a"],
        "lookupRoleArn": LOOKUP_ROLE,
        **more,
    }


def _offered(region: str, instance_type: str) -> list[str]:
    """What EC2 (moto) answers DescribeInstanceTypeOfferings for the type, asked directly."""
    ec2 = boto3.client("ec2", region_name=region)
    found = ec2.describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    )["InstanceTypeOfferings"]
    return sorted(o["Location"] for o in found)


@pytest.mark.parametrize(
    ("region", "instance_type"),
    [("us-east-1", "p5.48xlarge"), ("us-east-1", "g5.xlarge"), ("eu-north-1", "g6e.xlarge")],
)
def test_the_answer_is_the_zones_of_the_region_that_offer_the_type(aws_api, region, instance_type):
    expected = _offered(region, instance_type)
    assert expected, "moto serves offerings for this type"
    assert _ask(_props(instance_type, region)) == {"value": expected}


def test_a_type_no_zone_of_the_region_offers_is_an_empty_list(aws_api):
    assert _offered("ap-southeast-2", "g6e.xlarge") == []
    assert _ask(_props("g6e.xlarge", "ap-southeast-2")) == {"value": []}


def test_without_the_lookup_role_the_base_credentials_of_the_stacks_account_answer(aws_api):
    """As the CLI does for its own lookups: a role that cannot be assumed is passed over when
    the credentials are the account's own (here no role at all)."""
    assert _ask(_props(lookupRoleArn=None)) == {"value": _offered("us-east-1", "p5.48xlarge")}


def test_credentials_of_another_account_are_refused(aws_api):
    """Zone names map to physical zones per account: another account's answer would be wrong."""
    answer = _ask(_props(account="210987654321", lookupRoleArn=None))
    assert answer == {
        "error": "gpu-pool: cannot look up the zones of us-east-1 that offer p5.48xlarge for "
        "account 210987654321: the credentials are for account 123456789012; zone names and "
        "quotas differ between accounts: use credentials of account 210987654321"
    }


def test_bad_credentials_are_the_lookups_error(aws_api, monkeypatch):
    """moto checks credentials once authentication is on: an unknown key is refused as AWS
    refuses it (InvalidClientTokenId)."""
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY": "x"}
    assert _ask(_props(), env) == {
        "error": "gpu-pool: cannot look up the zones of us-east-1 that offer p5.48xlarge for "
        "account 123456789012: An error occurred (InvalidClientTokenId) when calling the "
        "GetCallerIdentity operation: The security token included in the request is invalid"
    }


def test_no_credentials_say_how_a_plugin_gets_them(aws_api, tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    }
    env.update(
        HOME=str(tmp_path),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    assert _ask(_props(), env) == {
        "error": "gpu-pool: cannot look up the zones of us-east-1 that offer p5.48xlarge for "
        "account 123456789012: no AWS credentials (environment, AWS_PROFILE or ~/.aws) for "
        "account 123456789012; the CDK CLI's --profile does not reach context provider plugins: "
        "set AWS_PROFILE"
    }


def test_an_unknown_region_is_named(aws_api):
    """EC2 has no endpoint there (against AWS the call would fail to resolve its host name)."""
    answer = _ask(_props(region="xx-nowhere-1"))
    assert answer["error"].startswith(
        "gpu-pool: cannot look up the zones of xx-nowhere-1 that offer p5.48xlarge for account "
        "123456789012: 'xx-nowhere-1' is not a Region of botocore "
    )
    assert answer["error"].endswith(
        "'s endpoint data: check the stack's region (or update botocore, if the Region is new)"
    )


def test_without_python3_the_error_says_so(tmp_path):
    answer = _ask(_props(), path=str(tmp_path))
    assert answer["error"].startswith(
        "gpu-pool: cannot run python3 for the instance type offerings lookup (set "
        "GPU_POOL_PYTHON to the app's Python): spawn python3 ENOENT"
    )


def test_gpu_pool_python_names_the_interpreter(aws_api, tmp_path):
    """docs/region.md: GPU_POOL_PYTHON, when python3 on PATH is not the app's (fails before:
    python3 on PATH, here none, was spawned whatever the variable said)."""
    python = tmp_path / "bin" / "app-python"
    python.parent.mkdir()
    python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    env = {**os.environ, "GPU_POOL_PYTHON": str(python)}
    answer = _ask(_props(account="210987654321", lookupRoleArn=None), env, path=str(tmp_path))
    # gpu_pool.lookups.offerings ran: its own answer, moto's credentials being another account's.
    assert answer == {
        "error": "gpu-pool: cannot look up the zones of us-east-1 that offer p5.48xlarge for "
        "account 210987654321: the credentials are for account 123456789012; zone names and "
        "quotas differ between accounts: use credentials of account 210987654321"
    }
    missing = {**os.environ, "GPU_POOL_PYTHON": str(tmp_path / "nowhere")}
    assert _ask(_props(), missing, path=str(tmp_path))["error"].startswith(
        f"gpu-pool: cannot run {tmp_path / 'nowhere'} for the instance type offerings lookup "
        f"(set GPU_POOL_PYTHON to the app's Python): spawn {tmp_path / 'nowhere'} ENOENT"
    )


def test_an_answer_that_is_not_json_is_an_error_not_a_crash(tmp_path):
    (tmp_path / "python3").write_text("#!/bin/sh\necho 'not json'\n")
    (tmp_path / "python3").chmod(0o755)
    answer = _ask(_props(), path=os.pathsep.join([str(tmp_path), "/usr/bin", "/bin"]))
    assert answer["error"].startswith("gpu-pool: the instance type offerings lookup answered no JSON: ")


def test_credentials_that_cannot_assume_the_lookup_role_answer_for_their_own_account(
    aws_api, monkeypatch
):
    """As the CLI does for its own lookups: the role refused (AccessDenied: the user may not
    call sts:AssumeRole), the user's own credentials answer, being the stack's account's."""
    iam = boto3.client("iam", region_name="us-east-1")
    user = f"lookup-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    iam.put_user_policy(
        UserName=user,
        PolicyName="offerings",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "ec2:DescribeInstanceTypeOfferings",
                        "Resource": "*",
                    }
                ],
            }
        ),
    )
    key = iam.create_access_key(UserName=user)["AccessKey"]
    expected = _offered("us-east-1", "p5.48xlarge")
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
    }
    refused = boto3.client(
        "sts",
        region_name="us-east-1",
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
    )
    with pytest.raises(ClientError, match="AccessDenied"):
        refused.assume_role(RoleArn=LOOKUP_ROLE, RoleSessionName="probe")
    assert _ask(_props(), env) == {"value": expected}


def test_a_cli_without_register_context_provider_alpha_still_loads_the_plugin():
    """The experimental method may be missing from a CDK CLI: the plugin's init must not throw
    (the CLI would stop at start: "Unable to load plug-in"), registers nothing, and leaves
    GPU_POOL_CDK_PLUGIN unset, so the app does not ask the provider the CLI lacks (the CLI fails
    a synth that asks an unknown plugin provider) and names the offerings as unchecked."""
    host = """
const plugin = require(process.argv[1]);
plugin.init({});
process.stdout.write(JSON.stringify({ loaded: process.env.GPU_POOL_CDK_PLUGIN ?? null }));
"""
    env = {k: v for k, v in os.environ.items() if k != "GPU_POOL_CDK_PLUGIN"}
    done = subprocess.run(
        [str(NODE), "-e", host, str(PLUGIN)], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == {"loaded": None}
