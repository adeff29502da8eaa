"""Several clusters in one app (docs/fleet.md), synthesized by app.py as `cdk synth` runs it: a
stack per cluster in its own account and Region, every file's errors together, and a single file
exactly as before."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest

from gpu_pool.cdk.nag.acknowledge import apply_aws_solutions
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import load_settings
from tests.support import rules
from tests.support.docs_examples import APP_CONTEXT
from tests.support.fleet import EXPECTED, run_app
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
    app = cdk.App(outdir=str(tmp_path / "library"), context=context)
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
