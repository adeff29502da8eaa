"""A Capacity Block not looked up yet (#29 item 6): the synth names the block, the key of its
cdk.context.json entry and the two ways to get it; the CDK CLI's own no-credentials error names
neither. And the whole offline path (#39 item 1): the CLI without credentials and without the
plugin finishes the docs' training example with a warning per unchecked fact, caches nothing,
and `gpu-pool replacements` refuses to deploy the assembly."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import aws_cdk as cdk
import pytest

from gpu_pool.cdk.lookups.context import NOT_ASKED
from gpu_pool.cdk.lookups.region import NO_PLUGIN
from gpu_pool.cdk.capacity.reservations import not_looked_up
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import load_settings
from tests.support.cfn import unvalidated_app
from tests.support.cli_env import without_aws
from tests.support.docs_examples import app_settings, settings_example
from tests.support.looked_up import capacity_block_key
from tests.support.paths import ROOT
from tests.support.rules import documented
from tests.support.settings import CAPACITY_BLOCK_ID, TRAINING

pytestmark = pytest.mark.synth

ACK = "[ack: gpu-pool:GP-TRAIN-20]"


def _expected(key: str, why: str = NOT_ASKED, pool: str = "train") -> str:
    return (
        f"pools.{pool}.capacity_reservation.id: Capacity Block {CAPACITY_BLOCK_ID} is not in "
        f"cdk.context.json yet ({why}), so the pool's zone, type and max_size are not checked "
        "against it, and gpu-pool replacements (./dev deploy) refuses this assembly. The CDK CLI "
        "looks it up, which needs AWS credentials for account 123456789012 (its "
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
    app = unvalidated_app(context=context)
    return GpuPoolStack(app, "T", settings=load_settings(TRAINING, None))


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
    (finding,) = documented(
        [not_looked_up(stack, "pools.train", CAPACITY_BLOCK_ID, key, NOT_ASKED)]
    )
    assert (finding.rule, str(finding)) == ("GP-TRAIN-20", _expected(key))
    settings = {**TRAINING, "acknowledge": {"GP-TRAIN-20": "CI synthesizes without credentials"}}
    quiet = GpuPoolStack(unvalidated_app(), "T", settings=load_settings(settings, None))
    assert [w for w in _warnings(quiet) if ACK in w] == []


def test_a_cached_block_warns_nothing():
    probe = cdk.Stack(
        unvalidated_app(), "P", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    answer = {"AvailabilityZone": "us-east-1a", "InstanceType": "p5.48xlarge"}
    stack = _stack({capacity_block_key(probe): [{**answer, "TotalInstanceCount": 8}]})
    assert [w for w in _warnings(stack) if ACK in w] == []


@pytest.mark.cli_synth
def test_offline_the_docs_training_example_synthesizes_with_warnings_and_is_not_deployed(
    tmp_path, capsys
):
    """As CI and a new user run it: the pinned CDK CLI, no AWS credentials, no cached lookup,
    and a cdk.json without the plugin (as a CLI without registerContextProviderAlpha). Every
    lookup fails or is not asked; the synth finishes with a warning naming each fact and its
    command (the VPC's zones naming cluster.zones), writes nothing to cdk.context.json, and
    `gpu-pool replacements --cdk-out` refuses the assembly. Before #39 the CLI's errors stopped
    the synth."""
    env = without_aws(tmp_path / "home")
    project = tmp_path / "app"
    project.mkdir()
    shutil.copy(ROOT / "app.py", project / "app.py")
    cdk_json = json.loads((ROOT / "cdk.json").read_text())
    del cdk_json["plugin"]
    example = settings_example("docs/training.md", "Example: a reserved p5 pool")
    cdk_json["context"]["gpu-pool"] = app_settings(example, tmp_path)
    (project / "cdk.json").write_text(json.dumps(cdk_json))
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    synth = [str(cli), "synth", "--quiet", "--no-notices", "--no-version-reporting"]
    done = subprocess.run(synth, cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert json.loads((project / "cdk.context.json").read_text()) == {}
    output = " ".join(done.stderr.split())
    no_credentials = "Need to perform AWS calls for account 123456789012"
    probe = cdk.Stack(
        unvalidated_app(), "P", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    key = capacity_block_key(probe)
    (block,) = re.findall(
        r"WARNING (pools\.train\.capacity_reservation\.id: .*?) \(Annotation\)", output
    )
    assert (
        block.startswith(_expected(key, no_credentials).split(" (")[0]) and no_credentials in block
    )
    warned = re.findall(r"WARNING (\S+): not checked \((.*?)\): (.*?)\. ", output)
    assert sorted((setting, fact) for setting, _, fact in warned) == [
        (
            "cluster.kubernetes_version",
            "whether us-east-1 publishes AL2023_x86_64_NVIDIA for Kubernetes 1.35",
        ),
        (
            "cluster.kubernetes_version",
            "whether us-east-1 publishes BOTTLEROCKET_x86_64_NVIDIA for Kubernetes 1.35",
        ),
        ("cluster.zones", "the zones of us-east-1 for account 123456789012"),
        # The on-demand twin's quota (#39 item 4); the block's pool counts against none.
        (
            "pools.train-od.max_size",
            "the vCPU quota Running On-Demand P instances (L-417A185B) of account 123456789012",
        ),
        ("pools.train.instance_types", "the zones of us-east-1 that offer p5.48xlarge"),
    ]
    assert {why for _, why, _ in warned} >= {NO_PLUGIN}
    assert (
        "The new VPC is built on placeholder zones (the ones the pools name, else dummy1a, "
        "dummy1b, dummy1c): set cluster.zones to three Availability Zones of the Region to "
        "build it without the lookup"
    ) in output
    from gpu_pool.cli.main import main

    assert main(["replacements", "--cdk-out", str(project / "cdk.out"), "--yes"]) == 2
    refused = capsys.readouterr().err
    assert f"replacements: {project / 'cdk.out'} was synthesized with facts unchecked" in refused
    # Refused for the facts the template rests on: the zones (its VPC's), the offerings, the AMI
    # type the pools boot, the block; the quota and the other AMI family only warn.
    assert refused.count("not checked (") == 3 and "Capacity Block" in refused
    assert "L-417A185B" not in refused and "BOTTLEROCKET" not in refused
