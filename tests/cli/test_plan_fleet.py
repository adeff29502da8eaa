"""`--config` naming a fleet (docs/fleet.md): `gpu-pool plan` prints every cluster's pools; the
commands that check one cluster say so instead of failing on a directory as a missing file."""

from __future__ import annotations

import json

import pytest
import yaml

from gpu_pool.cli.commands.plan.render import plan_json
from gpu_pool.cli.errors import CliError
from gpu_pool.cli.main import main
from gpu_pool.plan.summary import pool_summary
from gpu_pool.settings import load_settings
from tests.support.docs_examples import APP_CONTEXT
from tests.support.paths import ROOT

CDK_JSON = str(ROOT / "cdk.json")
FILES = {
    "us.yaml": "region: us-east-1\ncluster: {name: inference}\npool: {instance_types: [g6e.xlarge]}\n",
    "eu.yaml": "region: eu-west-1\ncluster: {name: research}\npools:\n"
    "  train: {instance_types: [p5.48xlarge], max_size: 2}\n",
}


@pytest.fixture
def fleet(tmp_path):
    folder = tmp_path / "fleet"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def test_plan_of_a_directory_is_each_clusters_plan_in_file_order(fleet, capsys):
    assert main(["plan", "--cdk-json", CDK_JSON, "--config", str(fleet), "--output", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    from gpu_pool.cli.sources import settings_pools

    each = [
        pool_summary(record)
        for name in ("eu.yaml", "us.yaml")  # sorted by name
        for record in settings_pools(load_settings(APP_CONTEXT, str(fleet / name))).records
    ]
    assert json.loads(out) == json.loads(json.dumps(plan_json(each)))
    assert [(p["cluster"], p["region"], p["pool"]) for p in json.loads(out)["pools"]] == [
        ("research", "eu-west-1", "train"),
        ("inference", "us-east-1", "gpu"),
    ]


def test_plan_table_of_a_fleet_file_heads_each_cluster(tmp_path, capsys):
    config = tmp_path / "fleet.yaml"
    config.write_text(
        "defaults: {pool: {instance_types: [g6.xlarge]}}\n"
        "clusters:\n  - {region: us-east-1}\n  - {region: eu-west-1}\n"
    )
    assert main(["plan", "--cdk-json", CDK_JSON, "--config", str(config)]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Cluster")]
    assert headers == [
        "Cluster gpu-pool, region us-east-1",
        "Cluster gpu-pool, region eu-west-1 (its prices below are us-east-1's)",
    ]


@pytest.mark.parametrize("command", ["verify", "doctor", "smoke-test-manifest"])
def test_a_command_that_checks_one_cluster_names_the_fleets_stacks(fleet, capsys, command):
    assert main([command, "--cdk-json", CDK_JSON, "--config", str(fleet)]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: --config: '{fleet}' holds 2 clusters (GpuPool-research-eu-west-1, "
        f"GpuPool-inference-us-east-1); {command} checks one: give --stack NAME of its deployed "
        "stack"
        + (
            f", or check them all from the synthesized app: cdk synth -c config={fleet}, then "
            "gpu-pool doctor --cdk-out cdk.out"
            if command == "doctor"
            else ""
        )
        + "\n"
    )


def test_a_fleets_errors_are_every_files(fleet, capsys):
    """A setting one file gets wrong, and pools another's settings describe that a synth
    refuses: both, each led by its file."""
    from gpu_pool.cli.sources import settings_pools
    from gpu_pool.settings import AppSettings

    amd = {"region": "us-east-1", "pool": {"instance_types": ["g4ad.xlarge"]}}
    (fleet / "us.yaml").write_text(json.dumps(amd))
    (fleet / "eu.yaml").write_text("region: Europe\n")
    with pytest.raises(CliError) as refused:
        settings_pools(AppSettings.model_validate({**APP_CONTEXT, **amd}))
    assert main(["plan", "--cdk-json", CDK_JSON, "--config", str(fleet)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"gpu-pool: {fleet / 'eu.yaml'}: region: 'Europe' is not an AWS region name such as "
        "us-east-1",
        *[f"{fleet / 'us.yaml'}: {line}" for line in str(refused.value).splitlines()],
    ]


def test_a_pool_name_on_several_clusters_of_an_assembly_is_never_picked_silently(
    fleet_assembly, capsys
):
    """The fleet's three clusters each have a pool `gpu`: verify or smoke-test-manifest must
    not take the first; --stack with --cdk-out chooses the cluster (fails before: the first
    cluster's pool, and --stack was refused beside --cdk-out)."""
    out = str(fleet_assembly)
    assert main(["smoke-test-manifest", "--cdk-out", out, "--pool", "gpu"]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: --pool: 'gpu' is a pool of several clusters in the pool records in '{out}' "
        "(inference in us-east-1, research in us-west-2, inference in eu-west-1); choose the "
        "cluster's stack with --stack NAME\n"
    )
    stack = "GpuPool-research-us-west-2"
    assert main(["smoke-test-manifest", "--cdk-out", out, "--stack", stack, "--pool", "gpu"]) == 0
    (pod,) = yaml.safe_load_all(capsys.readouterr().out)
    assert pod["spec"]["nodeSelector"] == {"gpu-pool.io/pool": "gpu"}
    assert main(["plan", "--cdk-out", out, "--stack", stack]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Cluster")]
    assert headers == ["Cluster research, region us-west-2 (its prices below are us-east-1's)"]
    assert main(["smoke-test-manifest", "--cdk-out", out, "--stack", "Nope"]) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: --stack: no stack 'Nope' in '{out}' (stacks with pools: "
        "GpuPool-inference-us-east-1, GpuPool-research-us-west-2, GpuPool-inference-eu-west-1)\n"
    )


def _fleet_with_an_existing_cluster(tmp_path, cloudwatch_owner: str) -> list[str]:
    """A fleet of two files beside a cdk.json whose cdk.context.json caches each Region's vCPU
    quota and the existing cluster `inference`, whose CloudWatch add-on `cloudwatch_owner`
    created (its owner tag, as the lookup reads it)."""
    from gpu_pool.plan.existing_cluster import cluster_context_key
    from tests.support.looked_up import quota_key
    from tests.unit.test_existing_cluster import ANSWER

    (tmp_path / "cdk.json").write_text((ROOT / "cdk.json").read_text())
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    account = "account: '123456789012'\n"
    pool = "pool: {instance_types: [g6e.xlarge], max_size: 8}\n"
    (fleet / "us.yaml").write_text(
        f"{account}region: us-east-1\ncluster: {{name: inference, existing: true}}\n"
        f"metrics: {{gpu: cloudwatch}}\n{pool}"
    )
    (fleet / "eu.yaml").write_text(
        f"{account}region: eu-west-1\ncluster: {{name: research}}\n{pool}"
    )
    cloudwatch = "amazon-cloudwatch-observability"
    answer = {
        **ANSWER,
        "addons": [*ANSWER["addons"], cloudwatch],
        "addonOwners": {cloudwatch: cloudwatch_owner},
    }
    context = {
        cluster_context_key("123456789012", "us-east-1", "inference"): answer,
        quota_key("L-DB2E81BA", region="us-east-1"): 16,
        quota_key("L-DB2E81BA", region="eu-west-1"): 512,
    }
    (tmp_path / "cdk.context.json").write_text(json.dumps(context))
    return ["plan", "--cdk-json", str(tmp_path / "cdk.json"), "--config", str(fleet)]


def test_a_fleets_plan_reads_each_clusters_cached_facts_as_its_own_stack(tmp_path, capsys):
    """#53 item 13: each cluster of a fleet is judged with the app's cdk.context.json as its
    synth would be: its Region's quota, and its existing cluster's add-ons read against the
    fleet's name for its stack (GpuPool-inference-us-east-1), so the CloudWatch add-on that
    stack created is its own, not one the stack would create twice (GP-APP-34)."""
    argv = _fleet_with_an_existing_cluster(tmp_path, "GpuPool-inference-us-east-1")
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if "vCPUs at max" in line] == [
        "    vCPUs at max      32 of Running On-Demand G and VT instances (L-DB2E81BA; quota 512)",
        "    vCPUs at max      32 of Running On-Demand G and VT instances (L-DB2E81BA; quota 16 "
        "(over it: launches past it fail))",
    ]
    assert any(
        "Cluster inference exists, looked up (cdk.context.json): Kubernetes 1.33" in line
        for line in lines
    )


def test_a_fleets_cluster_whose_add_on_another_stack_created_is_refused(tmp_path, capsys):
    """The twin: the add-on is the stack GpuPool's (the settings' stack_name, not the fleet's
    stack): the fleet's stack would create it again, which EKS refuses."""
    assert main(_fleet_with_an_existing_cluster(tmp_path, "GpuPool")) == 2
    assert "metrics.gpu: cloudwatch, and inference has the amazon-cloudwatch-observability" in (
        capsys.readouterr().err
    )
