"""The Region's facts as the stack looks them up (#31 item 2): the instance type offerings (the
project's CLI plugin) and the EKS NVIDIA AMI parameters (the `ssm` provider), under the keys
docs/region.md documents, judged once cdk.context.json holds them and never before."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

import aws_cdk as cdk
import boto3
import moto.settings
import pytest

from gpu_pool.cdk.lookups.region import NO_PLUGIN, PLUGIN_LOADED, REGION_LOOKUPS, region_facts
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import ConfigError, load_settings
from tests.support.cfn import unvalidated_app
from tests.support.cli_env import without_aws
from tests.support.looked_up import (
    LOOKUP,
    ZONES,
    ami_parameter_key,
    capacity_block_key,
    offerings_key,
    quota_key,
    reservation_key,
)
from tests.support.paths import ROOT
from tests.support.settings import CAPACITY_BLOCK_ID, ODCR_ID, TRAINING

pytestmark = pytest.mark.synth

SETTINGS = {
    "account": "123456789012",
    "region": "us-east-1",
    "cluster": {"kubernetes_version": "1.35"},
    "pool": {"instance_types": ["g6.xlarge"], "zones": ["us-east-1a", "us-east-1b"]},
}
AL2023 = "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
BOTTLEROCKET = "/aws/service/bottlerocket/aws-k8s-1.35-nvidia/x86_64/latest/image_id"
# "Running On-Demand G and VT instances": g6.xlarge's vCPU quota.
G_QUOTA = quota_key("L-DB2E81BA")
KEYS = [
    offerings_key("g6.xlarge"),
    G_QUOTA,
    ami_parameter_key(AL2023),
    ami_parameter_key(BOTTLEROCKET),
]
# Every lookup answered: the type offered in four zones, both AMI types published, 64 vCPUs.
CACHED = {
    **LOOKUP,
    offerings_key("g6.xlarge"): ZONES[:4],
    G_QUOTA: 64.0,
    ami_parameter_key(AL2023): "ami-0123456789abcdef0",
    ami_parameter_key(BOTTLEROCKET): "ami-0fedcba9876543210",
}
CACHED_AS = "EC2 DescribeInstanceTypeOfferings, cached in cdk.context.json"
CLI = ROOT / "node_modules" / ".bin" / "cdk"


def _synth(context: dict, out) -> tuple[list[dict], dict]:
    """The assembly's missing context (what the CLI would look up) and the stack's template."""
    app = unvalidated_app(context={REGION_LOOKUPS: True, **context}, outdir=str(out))
    GpuPoolStack(app, "GpuPool", settings=load_settings(SETTINGS, None))
    assembly = app.synth()
    manifest = json.loads((out / "manifest.json").read_text())
    return manifest.get("missing", []), assembly.get_stack_by_name("GpuPool").template


def _error(context: dict) -> list[str]:
    """The stack's error lines: every error is raised before anything is built."""
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(
            unvalidated_app(context={REGION_LOOKUPS: True, **context}),
            "GpuPool",
            settings=load_settings(SETTINGS, None),
        )
    return str(err.value).splitlines()


def test_uncached_lookups_are_asked_under_the_documented_keys_and_judge_nothing(
    tmp_path, monkeypatch
):
    """The CLI's first pass: every fact missing, the stack synthesizes on the dummy values (no
    false error), and the lookups ask for the keys the docs tell users to write by hand. The
    offerings are asked only when the CLI has loaded the plugin (it says so in the environment
    the app inherits)."""
    monkeypatch.setenv(PLUGIN_LOADED, "1")
    missing, uncached = _synth(LOOKUP, tmp_path / "first")
    assert sorted(m["key"] for m in missing) == sorted(KEYS)
    plugin = next(m for m in missing if m["provider"] == "plugin")
    # The CLI resolves the partition and hands the plugin the bootstrap lookup role to assume.
    assert plugin["props"]["lookupRoleArn"] == (
        "arn:${AWS::Partition}:iam::123456789012:role/"
        "cdk-hnb659fds-lookup-role-123456789012-us-east-1"
    )
    page = (ROOT / "docs" / "region.md").read_text(encoding="utf-8")
    assert f'"{offerings_key("p5.48xlarge")}": [' in page
    assert f'"{ami_parameter_key(AL2023)}": "not-published"' in page
    assert f'"{G_QUOTA}": 64' in page
    # Answered: nothing left to look up, and the answers change no resource; only the first
    # pass, whose facts are unchecked, carries the rule that refuses its deploy.
    missing, cached = _synth(CACHED, tmp_path / "second")
    assert missing == []
    assert cached["Resources"] == uncached["Resources"]
    assert "GpuPoolUncheckedFacts" in uncached["Rules"]
    assert "GpuPoolUncheckedFacts" not in cached["Rules"]


def test_a_type_the_region_does_not_offer_stops_the_synth():
    assert (
        f"pool.instance_types: 'g6.xlarge' is not offered in us-east-1 ({CACHED_AS}): choose a "
        "type that is, or deploy the pool to a Region that offers it"
    ) in _error({**CACHED, offerings_key("g6.xlarge"): []})


def test_a_pool_zone_without_the_type_is_named_with_the_zones_that_have_it():
    assert (
        f"pool.zones: us-east-1b does not offer 'g6.xlarge' ({CACHED_AS}); the zones of "
        "us-east-1 that do: us-east-1a, us-east-1c: choose among them"
    ) in _error({**CACHED, offerings_key("g6.xlarge"): ["us-east-1a", "us-east-1c"]})


def test_an_ami_type_the_region_does_not_publish_stops_the_synth():
    """The `ssm` provider caches the default value where the parameter does not exist."""
    assert (
        "pool.ami_family: AL2023_x86_64_NVIDIA is not published in us-east-1 for Kubernetes "
        f"1.35 (no SSM parameter {AL2023}, cached in cdk.context.json: `cdk context --reset` "
        "its entry to look again): set ami_family BOTTLEROCKET (BOTTLEROCKET_x86_64_NVIDIA), "
        "which is, or deploy the pool to another Region"
    ) in _error({**CACHED, ami_parameter_key(AL2023): "not-published"})


def test_a_failed_lookup_judges_nothing_and_is_named_not_an_error(tmp_path, monkeypatch):
    """#39 item 1. The CLI's second pass after a lookup failed: the context holds the provider's
    error, which aws-cdk-lib's ContextProvider.get_value would make the stack's error (the synth
    stopped there). The rules see no answer; GP-REGION-08 names the fact, why, and the command
    that reads it; the key is not asked again; the assembly records it for the deploy's
    refusal."""
    monkeypatch.setenv(PLUGIN_LOADED, "1")
    failed = {"$providerError": "no credentials", "$dontSaveContext": True}
    app = unvalidated_app(
        context={REGION_LOOKUPS: True, **CACHED, offerings_key("g6.xlarge"): failed},
        outdir=str(tmp_path),
    )
    stack = cdk.Stack(app, "Probe", env=cdk.Environment(account="123456789012", region="us-east-1"))
    facts = region_facts(stack, plan_pools(load_settings(SETTINGS, None)), "1.35")
    assert facts is not None
    assert (facts.offerings, facts.ami_types) == (
        {},
        {"AL2023_x86_64_NVIDIA": True, "BOTTLEROCKET_x86_64_NVIDIA": True},
    )
    assert [e.type for e in stack.node.metadata if e.type == "aws:cdk:error"] == []
    message = (
        "pool.instance_types: not checked (no credentials): the zones of us-east-1 that offer "
        "g6.xlarge. Read it with `aws ec2 describe-instance-type-offerings --location-type "
        "availability-zone --filters Name=instance-type,Values=g6.xlarge --region us-east-1`; a "
        "synth with credentials of account 123456789012 checks it and caches the answer in "
        "cdk.context.json. Until then gpu-pool replacements (./dev deploy) and the template's own "
        "rule refuse its deploy"
    )
    assert [str(e.data) for e in stack.node.metadata if e.type == "aws:cdk:warning"] == [
        f"{message} [ack: gpu-pool:GP-REGION-08]"
    ]
    assert [e.data for e in stack.node.metadata if e.type == "gpu-pool:unchecked"] == [
        {"rule": "GP-REGION-08", "message": message, "blocks_deploy": True}
    ]
    app.synth()
    assert "missing" not in json.loads((tmp_path / "manifest.json").read_text())


def test_without_the_plugin_the_offerings_are_named_and_never_asked(tmp_path, monkeypatch):
    """#39 item 1: a CDK CLI without registerContextProviderAlpha (or an app whose cdk.json
    does not load the plugin) fails a synth that asks the plugin's provider ("Unrecognized
    plugin context provider name"): the app does not ask it, and names the offerings."""
    monkeypatch.delenv(PLUGIN_LOADED, raising=False)
    # The CDK CLI runs the app with CDK_OUTDIR set (without it: no CLI, nothing asked).
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path / "cli-out"))
    missing, _ = _synth(LOOKUP, tmp_path)
    assert sorted(m["key"] for m in missing) == sorted(KEYS[2:])
    stack = GpuPoolStack(
        unvalidated_app(context={REGION_LOOKUPS: True, **CACHED}),
        "GpuPool",
        settings=load_settings({**SETTINGS, "pool": {**SETTINGS["pool"], "instance_types": ["g6e.xlarge"]}}, None),
    )
    (warning,) = [str(e.data) for e in stack.node.metadata if e.type == "aws:cdk:warning"]
    assert warning.startswith(f"pool.instance_types: not checked ({NO_PLUGIN}): the zones of us-east-1 that offer g6e.xlarge.")


def test_an_app_that_does_not_ask_for_region_lookups_makes_none(tmp_path):
    """Without gpu-pool:region-lookups (a user's own app, whose CLI has no gpu-pool plugin), an
    environment-bound stack asks for no offerings and no AMI parameters: only its zones."""
    app = unvalidated_app(context=LOOKUP, outdir=str(tmp_path))
    GpuPoolStack(app, "GpuPool", settings=load_settings(SETTINGS, None))
    app.synth()
    assert json.loads((tmp_path / "manifest.json").read_text()).get("missing", []) == []


def test_an_environment_agnostic_stack_looks_nothing_up(tmp_path):
    app = unvalidated_app(context={REGION_LOOKUPS: True}, outdir=str(tmp_path))
    stack = cdk.Stack(app, "Agnostic")
    assert region_facts(stack, plan_pools(load_settings({}, None)), "1.35") is None
    app.synth()
    assert "missing" not in json.loads((tmp_path / "manifest.json").read_text())


def _cli_synth(tmp_path, endpoint: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`cdk synth` of SETTINGS as a user runs it (the pinned CLI, cdk.json with its plugin),
    with AWS at moto's server; the CLI's output and the cdk.context.json it wrote."""
    env = without_aws(tmp_path / "home")
    env.update(
        PATH=os.pathsep.join([env["PATH"].split(os.pathsep)[0], str(CLI.parent), env["PATH"]]),
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        CDK_DISABLE_CLI_TELEMETRY="true",
    )
    project = tmp_path / "app"
    project.mkdir()
    shutil.copy(ROOT / "app.py", project / "app.py")
    cdk_json = json.loads((ROOT / "cdk.json").read_text())
    cdk_json["context"]["gpu-pool"] = SETTINGS
    (project / "cdk.json").write_text(json.dumps(cdk_json))
    synth = [str(CLI), "synth", "--quiet", "--no-notices", "--no-version-reporting"]
    done = subprocess.run(synth, cwd=project, env=env, capture_output=True, text=True, timeout=900)
    written = project / "cdk.context.json"
    return done, json.loads(written.read_text()) if written.exists() else {}


@pytest.mark.cli_synth
def test_the_cli_caches_the_plugins_answer_and_the_ami_parameters_moto_lacks(aws_api, tmp_path):
    """The whole path: the CLI loads the plugin from cdk.json, caches its answer and the `ssm`
    provider's default for each parameter that does not exist, and synthesizes again. moto
    (5.2.5) serves none of the EKS AMI parameters, as a Region EKS does not publish in."""
    done, context = _cli_synth(tmp_path, aws_api)
    offered = boto3.client("ec2", region_name="us-east-1").describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": ["g6.xlarge"]}],
    )["InstanceTypeOfferings"]
    assert context[offerings_key("g6.xlarge")] == sorted(o["Location"] for o in offered)
    assert context[ami_parameter_key(AL2023)] == "not-published"
    assert context[ami_parameter_key(BOTTLEROCKET)] == "not-published"
    assert done.returncode != 0
    output = " ".join(done.stderr.split())
    assert (
        "pool.ami_family: AL2023_x86_64_NVIDIA is not published in us-east-1 for Kubernetes "
        f"1.35 (no SSM parameter {AL2023}, cached in cdk.context.json: `cdk context --reset` "
        "its entry to look again): deploy the pool to a Region that publishes it; no NVIDIA AMI "
        "looked up for Kubernetes 1.35 is published in us-east-1: if the minor is new, it may be "
        "published nowhere yet, so set an older cluster.kubernetes_version until it is"
    ) in output


@pytest.mark.cli_synth
def test_the_cli_names_the_plugins_error_and_caches_nothing_of_it(aws_api, tmp_path, monkeypatch):
    """Bad credentials (moto with authentication on refuses the unknown key as AWS does): the
    synth finishes (#39 item 1), the warning carries the plugin's error, nothing is cached."""
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
    done, context = _cli_synth(tmp_path, aws_api)
    assert done.returncode == 0, done.stderr
    assert context == {}
    output = " ".join(done.stderr.split())
    assert (
        "WARNING pool.instance_types: not checked (gpu-pool: cannot look up the zones of "
        "us-east-1 that offer g6.xlarge for account 123456789012: An error occurred "
        "(InvalidClientTokenId) when calling the GetCallerIdentity operation: The security "
        "token included in the request is invalid): the zones of us-east-1 that offer g6.xlarge."
    ) in output


def test_a_capacity_block_the_lookup_does_not_find_is_an_error_not_a_warning(tmp_path):
    """The block lookup may find nothing (ignoreErrorOnMissingContext): the CLI's Cloud Control
    provider then answers the app's dummy value, and caches it. Fed back as the CLI caches it,
    that is GP-REGION-07, not GP-TRAIN-20's "not in cdk.context.json yet"."""
    env = cdk.Environment(account="123456789012", region="us-east-1")
    probe = cdk.Stack(unvalidated_app(), "P", env=env)
    key = capacity_block_key(probe)
    app = unvalidated_app(context=LOOKUP, outdir=str(tmp_path))
    GpuPoolStack(app, "T", settings=load_settings(TRAINING, None))
    app.synth()
    missing = json.loads((tmp_path / "manifest.json").read_text())["missing"]
    (block,) = [m for m in missing if m["key"] == key]
    assert block["props"]["ignoreErrorOnMissingContext"] is True
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(
            unvalidated_app(context={**LOOKUP, key: block["props"]["dummyValue"]}),
            "T",
            settings=load_settings(TRAINING, None),
        )
    assert str(err.value).splitlines() == [
        f"pools.train.capacity_reservation.id: EC2 has no reservation {CAPACITY_BLOCK_ID} in "
        "us-east-1 for account 123456789012 (Cloud Control GetResource, cached in "
        "cdk.context.json): a launch uses only reservations of its own Region and account; name "
        "a block of account 123456789012 in us-east-1, or deploy the pool's cluster to the "
        "Region the block was bought in (the answer is cached: `cdk context --reset` its entry "
        "if the block appears here later)"
    ]


# An ODCR pool: with region lookups its reservation is looked up as a Capacity Block is.
ODCR = {
    **SETTINGS,
    "pool": {
        "instance_types": ["g6.xlarge"],
        "capacity_reservation": {"type": "odcr", "id": ODCR_ID},
    },
}


def _odcr_key() -> str:
    env = cdk.Environment(account="123456789012", region="us-east-1")
    probe = cdk.Stack(unvalidated_app(), "P", env=env)
    return reservation_key(probe, ODCR_ID)


def _odcr_missing(context: dict, out) -> list[dict]:
    app = unvalidated_app(context=context, outdir=str(out))
    GpuPoolStack(app, "GpuPool", settings=load_settings(ODCR, None))
    app.synth()
    missing = json.loads((out / "manifest.json").read_text()).get("missing", [])
    return [m for m in missing if m["key"] == _odcr_key()]


def _odcr_error(answer: list[dict]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(
            unvalidated_app(context={REGION_LOOKUPS: True, **LOOKUP, _odcr_key(): answer}),
            "GpuPool",
            settings=load_settings(ODCR, None),
        )
    return str(err.value).splitlines()


def test_an_odcr_is_looked_up_only_with_region_lookups(tmp_path):
    """#31 item 2, "Capacity Blocks and ODCRs in the stack's Region only": an ODCR by id is
    asked under the Capacity Block's key form (it may find nothing); an app without region
    lookups asks nothing new and warns nothing (GP-TRAIN-20 is the Capacity Block's)."""
    (lookup,) = _odcr_missing({REGION_LOOKUPS: True, **LOOKUP}, tmp_path / "on")
    # The key docs/training.md writes for a block, with the ODCR's id (docs/region.md).
    documented = next(
        line.strip().split('"')[1]
        for line in (ROOT / "docs/training.md").read_text(encoding="utf-8").splitlines()
        if line.startswith('"cc-api-provider:')
    )
    assert lookup["key"] == documented.replace(CAPACITY_BLOCK_ID, ODCR_ID)
    assert lookup["provider"] == "cc-api-provider"
    assert lookup["props"]["ignoreErrorOnMissingContext"] is True
    assert _odcr_missing(LOOKUP, tmp_path / "off") == []
    app = unvalidated_app(context={REGION_LOOKUPS: True, **LOOKUP})
    stack = GpuPoolStack(app, "GpuPool", settings=load_settings(ODCR, None))
    assert [e for e in stack.node.metadata if "GP-TRAIN-20" in str(e.data)] == []


def test_an_odcr_the_lookup_does_not_find_is_gp_region_07(tmp_path):
    (lookup,) = _odcr_missing({REGION_LOOKUPS: True, **LOOKUP}, tmp_path)
    assert _odcr_error(lookup["props"]["dummyValue"]) == [
        f"pool.capacity_reservation.id: EC2 has no reservation {ODCR_ID} in us-east-1 for "
        "account 123456789012 (Cloud Control GetResource, cached in cdk.context.json): a launch "
        "uses only reservations of its own Region and account; name a reservation of account "
        "123456789012 in us-east-1, or deploy the pool's cluster to the Region the reservation "
        "was made in (the answer is cached: `cdk context --reset` its entry if the reservation "
        "appears here later)"
    ]


def test_an_odcr_in_another_regions_zone_is_gp_region_05():
    answer = {"AvailabilityZone": "us-west-2a", "InstanceType": "g6.xlarge", "TotalInstanceCount": 2}
    assert _odcr_error([answer]) == [
        f"pool.capacity_reservation.id: {ODCR_ID} is in us-west-2a (us-west-2, "
        "cdk.context.json), the stack in us-east-1: a launch uses only reservations of its own "
        "Region; use a reservation in us-east-1, or deploy the pool's cluster to us-west-2"
    ]


def test_an_odcr_in_the_stacks_region_is_not_judged_as_a_capacity_block():
    """Its count and type are not the pool's limits (GP-TRAIN-16/17 are Capacity Block rules)."""
    answer = {"AvailabilityZone": "us-east-1a", "InstanceType": "g6e.xlarge", "TotalInstanceCount": 1}
    stack = GpuPoolStack(
        unvalidated_app(context={REGION_LOOKUPS: True, **LOOKUP, _odcr_key(): [answer]}),
        "GpuPool",
        settings=load_settings(ODCR, None),
    )
    assert [e for e in stack.node.metadata if "GP-TRAIN" in str(e.data)] == []


def test_a_cached_quota_below_the_pools_need_is_warned(monkeypatch):
    """#39 item 4 end to end: the quota lookup's cached value reaches GP-REGION-09."""
    monkeypatch.setenv(PLUGIN_LOADED, "1")
    settings = {**SETTINGS, "pool": {**SETTINGS["pool"], "max_size": 400}}
    stack = GpuPoolStack(
        unvalidated_app(context={REGION_LOOKUPS: True, **CACHED}),
        "GpuPool",
        settings=load_settings(settings, None),
    )
    warnings = [
        str(e.data)
        for node in stack.node.find_all()
        for e in node.node.metadata
        if e.type == "aws:cdk:warning"
    ]
    # Two zones, a node group each at max_size 400 of 4 vCPUs (within EKS's 450, GP-POOL-32).
    assert [w.split(", and the")[0] for w in warnings if "GP-REGION-09" in w] == [
        "pool.max_size: at max size the pools need up to 3200 vCPUs of Running On-Demand G "
        "and VT instances (L-DB2E81BA; gpu 3200)"
    ]


def test_a_template_built_on_unchecked_facts_refuses_its_own_deploy(tmp_path):
    """#39 item 1, every deploy path (`cdk deploy`, a console, a pipeline): CloudFormation
    evaluates a template's Rules before it changes anything, and this one fails unless the
    deployer passes GpuPoolFactsChecked with the digest of these very facts (the CDK CLI reuses
    a stack's previous parameter values: a value given once for other facts must not pass)."""
    _, template = _synth({}, tmp_path)
    metadata = json.loads((tmp_path / "GpuPool.metadata.json").read_text())
    facts = sorted(
        e["data"]["message"]
        for entries in metadata.values()
        for e in entries
        if e["type"] == "gpu-pool:unchecked" and e["data"]["blocks_deploy"]
    )
    digest = hashlib.sha256("\n".join(facts).encode()).hexdigest()[:12]
    assert template["Parameters"]["GpuPoolFactsChecked"]["Default"] == "no"
    (assertion,) = template["Rules"]["GpuPoolUncheckedFacts"]["Assertions"]
    assert assertion["Assert"] == {"Fn::Equals": [{"Ref": "GpuPoolFactsChecked"}, digest]}
    assert assertion["AssertDescription"] == (
        "gpu-pool synthesized this template without facts its account holds (the synth's "
        "GP-REGION-08 and GP-TRAIN-20 warnings name them): synthesize it with credentials of "
        f"account 123456789012 and deploy that, or pass GpuPoolFactsChecked={digest} if you "
        "checked them"
    )


def test_facts_that_feed_only_warnings_do_not_hold_the_deploy(tmp_path, monkeypatch):
    """Review of #39: the vCPU quota (GP-REGION-09 is a warning) and the AMI family the pools
    do not boot (named in a message only) are warned as unchecked, and the deploy does not wait
    for them: their entries say so, and there is no rule."""
    monkeypatch.setenv(PLUGIN_LOADED, "1")
    failed = {"$providerError": "no credentials", "$dontSaveContext": True}
    context = {**CACHED, G_QUOTA: failed, ami_parameter_key(BOTTLEROCKET): failed}
    _, template = _synth(context, tmp_path)
    metadata = json.loads((tmp_path / "GpuPool.metadata.json").read_text())
    entries = [e for found in metadata.values() for e in found]
    unchecked = [e["data"] for e in entries if e["type"] == "gpu-pool:unchecked"]
    assert [u["blocks_deploy"] for u in unchecked] == [False, False]
    warned = [
        e["data"]
        for e in entries
        if e["type"] == "aws:cdk:warning" and "GP-REGION-08" in e["data"]
    ]
    assert len(warned) == 2
    assert all("the deploy does not wait for it" in w for w in warned)
    assert "GpuPoolUncheckedFacts" not in template.get("Rules", {})


def test_the_deploy_guard_is_a_valid_cloudformation_rule(tmp_path):
    """The guard against CloudFormation's own template rules (cfn-lint's schema of Rules,
    Parameters and the rule functions), on a stack holding nothing else: a malformed rule would
    fail every deploy, unchecked facts or not."""
    from gpu_pool.cdk.lookups.context import guard_deploy, record_unchecked
    from gpu_pool.model.findings import warning
    from tests.support.cfn_lint import cfn_lint

    app = unvalidated_app(outdir=str(tmp_path / "out"))
    env = cdk.Environment(account="123456789012", region="us-east-1")
    stack = cdk.Stack(app, "Guarded", env=env)
    record_unchecked(stack, warning("GP-REGION-08", "cluster.zones", "not checked"))
    guard_deploy(stack)
    cdk.CfnWaitConditionHandle(stack, "Something")
    template = app.synth().get_stack_by_name("Guarded").template
    assert "GpuPoolUncheckedFacts" in template["Rules"]
    assert cfn_lint(template, project_ignores=False) == []


def test_the_zones_hold_no_deploy_where_cluster_zones_names_them(tmp_path):
    """#48 item 10: with cluster.zones the VPC is built from them, not from the lookup, so the
    zones the lookup has not answered only warn (the pools' zones are not judged) and the
    template carries no deploy guard."""
    settings = {**SETTINGS, "cluster": {**SETTINGS["cluster"], "zones": ZONES[:3]}}
    app = unvalidated_app(outdir=str(tmp_path))
    GpuPoolStack(app, "GpuPool", settings=load_settings(settings, None))
    template = app.synth().get_stack_by_name("GpuPool").template
    metadata = json.loads((tmp_path / "GpuPool.metadata.json").read_text())
    unchecked = [
        e["data"]
        for entries in metadata.values()
        for e in entries
        if e["type"] == "gpu-pool:unchecked"
    ]
    assert [(u["rule"], u["blocks_deploy"]) for u in unchecked] == [("GP-REGION-08", False)]
    assert "GpuPoolUncheckedFacts" not in template.get("Rules", {})
