"""examples/app.py, the app docs/library.md shows: it synthesizes, and that page holds its code."""

from __future__ import annotations

import json
import re
import runpy
import shutil
import subprocess

import pytest

from tests.support.cfn import render
from tests.support.cli_env import without_aws
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "app.py"


@pytest.fixture(scope="module")
def cloud_assembly():
    """The example app, synthesized once."""
    return runpy.run_path(str(EXAMPLE), run_name="__main__")["app"].synth()


@pytest.fixture(scope="module")
def assembly(cloud_assembly):
    """The example app's stacks: {stack name: (environment, template)}."""
    return {
        stack.stack_name: (
            f"aws://{stack.environment.account}/{stack.environment.region}",
            stack.template,
        )
        for stack in cloud_assembly.stacks
    }


def test_the_example_draws_no_gpu_pool_warning(cloud_assembly):
    """It is what docs/provisioners.md points to for mixing provisioners: each provisioner's
    pools carry a taint the other's pods do not tolerate, so no pod is pending to both
    (GP-PAIR-07)."""
    warnings = [
        str(entry.data)
        for stack in cloud_assembly.stacks
        for entry in stack.find_metadata_by_type("aws:cdk:warning")
        if "[ack: gpu-pool:" in str(entry.data)
    ]
    assert warnings == []


def _of_type(template, type_name):
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_name}


def test_the_example_deploys_two_stacks_to_two_accounts_and_regions(assembly):
    assert {name: environment for name, (environment, _) in assembly.items()} == {
        "MlPlatform": "aws://111111111111/us-east-1",
        "PartnerCluster": "aws://222222222222/eu-west-1",
    }


def test_its_own_cluster_gets_two_node_group_pools_an_autoscaler_and_a_karpenter_pool(assembly):
    _, template = assembly["MlPlatform"]
    pool_groups = {
        tuple(r["Properties"]["InstanceTypes"]): r["Properties"]["Labels"]["gpu-pool.io/pool"]
        for r in _of_type(template, "AWS::EKS::Nodegroup").values()
        if "gpu-pool.io/pool" in r["Properties"].get("Labels", {})
    }
    assert pool_groups == {
        ("g6e.xlarge",): "inference",
        ("g5.xlarge",): "inference",
        ("p5.48xlarge",): "training",
    }
    charts = sorted(
        r["Properties"]["Release"]
        for r in _of_type(template, "Custom::AWSCDK-EKS-HelmChart").values()
    )
    assert charts == [
        "cluster-autoscaler",
        "dcgm-exporter",
        "karpenter",
        "karpenter-crd",
        "nvidia-device-plugin-batch",
        "nvidia-device-plugin-inference",
        "nvidia-device-plugin-training",
    ]
    node_pools = [
        manifest
        for r in _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
        for manifest in json.loads(render(r["Properties"]["Manifest"]))
        if manifest["kind"] == "NodePool"
    ]
    assert [(m["metadata"]["name"], m["spec"]["limits"]) for m in node_pools] == [
        ("gpu-pool-batch", {"nvidia.com/gpu": "8", "nodes": "8"})
    ]
    assert json.loads(template["Outputs"]["InferenceNodeSelector"]["Value"]) == {
        "gpu-pool.io/pool": "inference"
    }
    # The exporter tolerates the taints of every pool of the cluster, the Karpenter pool's and
    # those added before it alike, each key and effect once.
    (exporter,) = (
        r
        for r in _of_type(template, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Release"] == "dcgm-exporter"
    )
    assert json.loads(render(exporter["Properties"]["Values"]))["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_its_own_cluster_gets_the_node_monitoring_agent_its_pools_repair_on(assembly):
    """Review of #36: the example's pools repair (the default) and its app added no agent."""
    _, template = assembly["MlPlatform"]
    addons = [r["Properties"]["AddonName"] for r in _of_type(template, "AWS::EKS::Addon").values()]
    assert "eks-node-monitoring-agent" in addons


def test_the_imported_cluster_gets_a_pool_and_an_autoscaler_without_an_add_on(assembly):
    _, template = assembly["PartnerCluster"]
    ((_, nodegroup),) = _of_type(template, "AWS::EKS::Nodegroup").items()
    assert nodegroup["Properties"]["ClusterName"] == "partner-prod"
    assert nodegroup["Properties"]["Subnets"] == ["subnet-0aaaaaaaaaaaaaaaa"]
    assert not _of_type(template, "AWS::EKS::Addon")
    (chart,) = [
        r
        for r in _of_type(template, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Release"] == "cluster-autoscaler"
    ]
    values = json.loads(render(chart["Properties"]["Values"]))
    assert values["image"]["tag"].startswith("v1.35.")
    assert values["awsRegion"] == "eu-west-1"


def test_the_library_page_shows_the_example_as_it_is():
    page = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    section = page.split("# Using the construct\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert blocks == [EXAMPLE.read_text(encoding="utf-8")]


def test_the_readme_points_to_the_example_and_its_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(examples/app.py)" in readme
    assert "(docs/library.md)" in readme


@pytest.mark.cli_synth
def test_the_example_synthesizes_with_the_pinned_cdk_cli_and_no_credentials(tmp_path):
    """As a user runs it: `cdk synth` in examples/ (its cdk.json: `python3 app.py`), with no AWS
    credentials or config. The VPC's zone lookup is answered by the context in examples/cdk.json,
    so nothing needs an account."""
    env = without_aws(tmp_path / "home")
    # A copy, as the CLI writes cdk.context.json beside cdk.json.
    project = tmp_path / "example"
    project.mkdir()
    for name in ("app.py", "cdk.json"):
        shutil.copy(EXAMPLE.parent / name, project / name)
    out = tmp_path / "cdk.out"
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    synth = [str(cli), "synth", "--quiet", "--no-notices", "--no-version-reporting", "-o", str(out)]
    done = subprocess.run(synth, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in out.glob("*.template.json")) == [
        "MlPlatform.template.json",
        "PartnerCluster.template.json",
    ]
    template = json.loads((out / "MlPlatform.template.json").read_text())
    subnets = _of_type(template, "AWS::EC2::Subnet").values()
    assert sorted({s["Properties"]["AvailabilityZone"] for s in subnets}) == [
        "us-east-1a",
        "us-east-1b",
        "us-east-1c",
    ]
