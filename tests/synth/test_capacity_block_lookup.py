"""A Capacity Block not looked up yet (#29 item 6): the synth names the block, the key of its
cdk.context.json entry and the two ways to get it; the CDK CLI's own no-credentials error names
neither."""

from __future__ import annotations

import json
import shutil
import subprocess

import aws_cdk as cdk
import pytest

from gpu_pool.cdk.reservations import not_looked_up
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import load_settings
from tests.support.cli_env import without_aws
from tests.support.looked_up import capacity_block_key
from tests.support.paths import ROOT
from tests.support.rules import documented
from tests.support.settings import CAPACITY_BLOCK_ID, TRAINING

pytestmark = pytest.mark.synth

ACK = "[ack: gpu-pool:GP-TRAIN-20]"


def _expected(key: str) -> str:
    return (
        f"pools.train.capacity_reservation.id: Capacity Block {CAPACITY_BLOCK_ID} is not in "
        "cdk.context.json yet, so the pool's zone, type and max_size are not checked against "
        "it. The CDK CLI looks it up, which needs AWS credentials for account 123456789012 (its "
        "bootstrap lookup role in us-east-1): run one synth where they exist and commit "
        "cdk.context.json, and CI synthesizes without them. Or add the entry to "
        "cdk.context.json by hand, from aws ec2 describe-capacity-reservations "
        f"--capacity-reservation-ids {CAPACITY_BLOCK_ID}: "
        f'"{key}": [{{"AvailabilityZone": "<its zone>", "InstanceType": "<its type>", '
        f'"TotalInstanceCount": <its count>, "Identifier": "{CAPACITY_BLOCK_ID}"}}]'
    )


def _warnings(stack: cdk.Stack) -> list[str]:
    return [str(e.data) for e in stack.node.metadata if e.type == "aws:cdk:warning"]


def _stack(context: dict | None = None) -> GpuPoolStack:
    return GpuPoolStack(cdk.App(context=context), "T", settings=load_settings(TRAINING, None))


def test_a_block_not_in_the_context_is_named_with_its_entrys_key():
    stack = _stack()
    key = capacity_block_key(stack)
    # docs/training.md shows the entry under the same key.
    assert f'"{key}": [' in (ROOT / "docs/training.md").read_text(encoding="utf-8")
    assert [w for w in _warnings(stack) if ACK in w] == [f"{_expected(key)} {ACK}"]


def test_the_warning_is_rule_gp_train_20_which_the_settings_acknowledge():
    """#29 review nit: it was `gpu-pool:capacity-block-lookup`, in no index and refused by the
    settings key `acknowledge`."""
    stack = _stack()
    key = capacity_block_key(stack)
    (finding,) = documented([not_looked_up("pools.train", CAPACITY_BLOCK_ID, key, stack)])
    assert (finding.rule, str(finding)) == ("GP-TRAIN-20", _expected(key))
    settings = {**TRAINING, "acknowledge": {"GP-TRAIN-20": "CI synthesizes without credentials"}}
    quiet = GpuPoolStack(cdk.App(), "T", settings=load_settings(settings, None))
    assert [w for w in _warnings(quiet) if ACK in w] == []


def test_a_cached_block_warns_nothing():
    probe = cdk.Stack(cdk.App(), "P", env=cdk.Environment(account="123456789012", region="us-east-1"))
    answer = {"AvailabilityZone": "us-east-1a", "InstanceType": "p5.48xlarge"}
    stack = _stack({capacity_block_key(probe): [{**answer, "TotalInstanceCount": 8}]})
    assert [w for w in _warnings(stack) if ACK in w] == []


@pytest.mark.cli_synth
def test_the_cli_without_credentials_shows_the_block_beside_its_own_error(tmp_path):
    """As CI runs it: the pinned CDK CLI, no AWS credentials. The CLI's lookup fails, it re-runs
    the app with the error and prints both."""
    env = without_aws(tmp_path / "home")
    project = tmp_path / "app"
    project.mkdir()
    shutil.copy(ROOT / "app.py", project / "app.py")
    cdk_json = json.loads((ROOT / "cdk.json").read_text())
    cdk_json["context"]["gpu-pool"] = TRAINING
    (project / "cdk.json").write_text(json.dumps(cdk_json))
    # The VPC's zones, as a committed cdk.context.json answers them: the block is the only
    # lookup left.
    zones = "availability-zones:account=123456789012:region=us-east-1"
    (project / "cdk.context.json").write_text(
        json.dumps({zones: ["us-east-1a", "us-east-1b", "us-east-1c"]})
    )
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    synth = [str(cli), "synth", "--quiet", "--no-notices", "--no-version-reporting"]
    done = subprocess.run(synth, cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode != 0
    output = " ".join(done.stderr.split())
    assert "Need to perform AWS calls for account 123456789012" in output
    probe = cdk.Stack(cdk.App(), "P", env=cdk.Environment(account="123456789012", region="us-east-1"))
    assert f"WARNING {_expected(capacity_block_key(probe))}" in output
