"""Several clusters in one app (docs/fleet.md), synthesized by app.py as `cdk synth` runs it: a
stack per cluster in its own account and Region, every file's errors together, and a single file
exactly as before."""

from __future__ import annotations

import json

import pytest

from gpu_pool.cdk.lookups.region import REGION_LOOKUPS
from gpu_pool.cdk.nag.acknowledge import apply_aws_solutions
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import load_settings
from tests.support import rules
from tests.support.cfn import unvalidated_app
from tests.support.docs_examples import APP_CONTEXT
from tests.support.fleet import EXPECTED, run_app, zone_lookups
from tests.support.paths import ROOT
from tests.support.settings import MULTI

pytestmark = pytest.mark.synth


def _stacks(assembly):
    manifest = json.loads((assembly / "manifest.json").read_text())
    return {
        artifact["displayName"]: artifact
        for artifact in manifest["artifacts"].values()
        if artifact["type"] == "aws:cloudformation:stack"
    }


def test_each_cluster_is_a_stack_of_its_name_in_its_account_and_region(fleet_assembly):
    stacks = _stacks(fleet_assembly)
    assert {name: s["environment"] for name, s in stacks.items()} == {
        name: environment for name, (environment, _, _) in EXPECTED.items()
    }
    # The CloudFormation stack name is the construct's (no prefix from a stage).
    assert {s["properties"].get("stackName", name) for name, s in stacks.items()} == set(EXPECTED)


def test_each_template_holds_its_own_cluster_pool_and_zones(fleet_assembly):
    stacks = _stacks(fleet_assembly)
    for name, (environment, cluster_name, instance_types) in EXPECTED.items():
        template = json.loads(
            (fleet_assembly / stacks[name]["properties"]["templateFile"]).read_text()
        )
        resources = template["Resources"].values()
        (cluster,) = [r for r in resources if r["Type"] == "AWS::EKS::Cluster"]
        assert cluster["Properties"]["Name"] == cluster_name, name
        pool_types = [
            r["Properties"]["InstanceTypes"]
            for r in resources
            if r["Type"] == "AWS::EKS::Nodegroup"
            and "gpu-pool.io/pool" in r["Properties"].get("Labels", {})
        ]
        assert pool_types == [instance_types], name
        region = environment.rsplit("/", 1)[1]
        zones = {
            r["Properties"]["AvailabilityZone"]
            for r in resources
            if r["Type"] == "AWS::EC2::Subnet"
        }
        assert zones == {f"{region}{letter}" for letter in "abc"}, name


def test_a_single_file_synthesizes_byte_identical_to_the_one_stack_app(tmp_path):
    """`-c config=FILE` through app.py is exactly what the app always built: GpuPoolStack named
    by stack_name from load_settings, with cdk-nag (the app before fleets)."""
    config = tmp_path / "cluster.yaml"
    config.write_text(json.dumps(MULTI), encoding="utf-8")
    context = {
        **json.loads((ROOT / "cdk.json").read_text())["context"],
        "availability-zones:account=123456789012:region=us-east-1": ["us-east-1a", "us-east-1b"],
    }
    result = run_app(tmp_path, str(config), {k: v for k, v in context.items() if ":" in k})
    assert result.returncode == 0, result.stderr
    app = unvalidated_app(outdir=str(tmp_path / "library"), context=context)
    settings = load_settings(APP_CONTEXT, str(config))
    GpuPoolStack(app, settings.stack_name, settings=settings)
    apply_aws_solutions(app)
    app.synth()
    ours = sorted(p.name for p in (tmp_path / "out").glob("*.template.json"))
    assert ours == [f"{settings.stack_name}.template.json"]
    assert (tmp_path / "out" / ours[0]).read_bytes() == (
        tmp_path / "library" / ours[0]
    ).read_bytes()


def test_the_app_reports_every_files_errors_and_synthesizes_nothing(tmp_path):
    """Two broken files (a setting misspelt; a rule a synth checks) and a good one: both broken
    files are named, each message as a single file gets it, led by the file."""
    folder = tmp_path / "clusters"
    folder.mkdir()
    (folder / "a-ok.yaml").write_text("region: us-east-1\ncluster: {name: ok}\n")
    (folder / "b-amd.yaml").write_text(
        "region: us-west-2\ncluster: {name: amd}\npool: {instance_types: [g4ad.xlarge]}\n"
    )
    (folder / "c-typo.yaml").write_text("region: eu-west-1\nautoscaler: {enabeld: true}\n")
    result = run_app(tmp_path, str(folder))
    rule_errors = [
        message
        for level, message in rules.findings({"pool": {"instance_types": ["g4ad.xlarge"]}})
        if level == "E"
    ]
    assert rule_errors
    assert result.stderr.splitlines() == [
        "gpu-pool: configuration error",
        f"  {folder / 'c-typo.yaml'}: autoscaler.enabeld: unknown setting; did you mean "
        "'enabled'? (valid: enabled, scale_down_unneeded_time, scale_down_delay_after_add, "
        "expander, node_selector, chart_version, image_tag)",
        *[f"  {folder / 'b-amd.yaml'}: {line}" for line in rule_errors],
    ]
    assert result.returncode == 1
    assert not list((tmp_path / "out").glob("*.template.json"))


def test_a_fleet_files_pipeline_makes_the_app_that_pipelines_stack(tmp_path):
    """examples/pipeline/fleet.yaml through app.py: the pipeline's stack alone at the top, in
    its account and Region, and a stage per cluster holding that cluster's stack, by the name
    a plain `cdk deploy` of the fleet gives it."""
    example = ROOT / "examples" / "pipeline"
    zones = json.loads((example / "cdk.json").read_text())["context"]
    # As examples/pipeline/cdk.json: region lookups off (its synth step looks nothing up, and
    # a pipeline's stage fails on a fact it could not check).
    result = run_app(tmp_path, str(example / "fleet.yaml"), {**zones, REGION_LOOKUPS: False})
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    # Beside it, CDK Pipelines' support stacks: an artifact bucket in each other Region.
    assert {name: s["environment"] for name, s in _stacks(out).items()} == {
        "GpuPoolPipeline": "aws://111111111111/us-east-1",
        "cross-region-stack-111111111111:eu-west-1": "aws://111111111111/eu-west-1",
        "cross-region-stack-111111111111:us-west-2": "aws://111111111111/us-west-2",
    }
    stages = {
        stage.name.removeprefix("assembly-GpuPoolPipeline-"): _stacks(stage)
        for stage in out.glob("assembly-GpuPoolPipeline-*")
    }
    assert {
        stage: {s["properties"]["stackName"]: s["environment"] for s in stacks.values()}
        for stage, stacks in stages.items()
    } == {
        "GpuInference-us-east-1": {"GpuInference-us-east-1": "aws://111111111111/us-east-1"},
        "GpuInference-eu-west-1": {"GpuInference-eu-west-1": "aws://222222222222/eu-west-1"},
        "GpuTraining-us-west-2": {"GpuTraining-us-west-2": "aws://222222222222/us-west-2"},
    }


def test_a_pipelines_clusters_report_their_rule_errors_together(tmp_path):
    """With `pipeline:`, every cluster's rule errors still show, each led by its stack."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "defaults: {account: '111111111111', pool: {instance_types: [g4ad.xlarge]}}\n"
        "clusters:\n"
        "  - {region: us-east-1, cluster: {name: a}}\n"
        "  - {region: us-west-2, cluster: {name: b}}\n"
        "pipeline:\n"
        "  account: '111111111111'\n"
        "  region: us-east-1\n"
        "  source:\n"
        "    connection_arn: arn:aws:codeconnections:us-east-1:111111111111:connection/"
        "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d\n"
        "    repository: acme/gpu-fleet\n"
        "    branch: main\n"
        "  synth_commands: [npx cdk synth -c config=fleet.yaml]\n"
    )
    result = run_app(tmp_path, str(fleet), zone_lookups())
    rule_errors = [
        message
        for level, message in rules.findings({"pool": {"instance_types": ["g4ad.xlarge"]}})
        if level == "E"
    ]
    assert result.stderr.splitlines() == [
        "gpu-pool: configuration error",
        *[f"  GpuPool-a-us-east-1: {line}" for line in rule_errors],
        *[f"  GpuPool-b-us-west-2: {line}" for line in rule_errors],
    ]
    assert result.returncode == 1
