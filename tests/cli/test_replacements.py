"""Which node groups a deploy would replace or delete, on pairs of synthesized templates."""

from __future__ import annotations

import copy
import json

import pytest

from gpu_pool.cli.commands.replacements.changes import (
    addon_additions,
    nodegroup_losses,
    nodegroup_rolls,
)
from gpu_pool.cli.main import main
from tests.support.cfn import synth, write_assembly
from tests.support.settings import EXISTING

GROUP = "GpuPoolG5Xlarge2D99A550"


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        (
            {"instance_types": ["g6.xlarge"]},
            f'node group {GROUP} (pool gpu, g5.xlarge): deleted; InstanceTypes: ["g5.xlarge"] -> ["g6.xlarge"]',
        ),
        (
            {"ami_family": "BOTTLEROCKET"},
            f'node group {GROUP} (pool gpu, g5.xlarge): replaced; AmiType: "AL2023_x86_64_NVIDIA" -> '
            '"BOTTLEROCKET_x86_64_NVIDIA"',
        ),
        (
            {"capacity_type": "SPOT"},
            f'node group {GROUP} (pool gpu, g5.xlarge): replaced; CapacityType: "ON_DEMAND" -> '
            '"SPOT"',
        ),
    ],
    ids=["instance-type", "ami-type", "capacity-type"],
)
def test_changes_that_replace_a_group_are_named_with_their_property(
    default_template, pool, expected
):
    changed = synth({"pool": pool})
    losses = nodegroup_losses(default_template.to_json(), changed.to_json())
    assert [str(loss) for loss in losses] == [expected]


def test_a_disk_change_is_named_as_a_rolling_update_not_a_replacement(default_template):
    bigger = synth({"pool": {"disk_size_gib": 300}}).to_json()
    assert nodegroup_losses(default_template.to_json(), bigger) == []
    (roll,) = nodegroup_rolls(default_template.to_json(), bigger)
    assert roll.logical_id == GROUP
    # The changed value and the setting behind it, not the whole block device mapping.
    assert roll.reasons == (
        "rolled",
        "launch template BlockDeviceMappings[0].Ebs.VolumeSize (disk_size_gib): 200 -> 300",
    )


def test_the_offline_form_heads_each_list_and_names_added_groups(default_template, tmp_path, capsys):
    """#29 item 1: the rolled list had no heading and added groups were left out; each group is
    named by pool and instance types beside its logical id."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(default_template.to_json()))
    changed = synth({"pool": {"instance_types": ["g5.xlarge", "g6.xlarge"], "disk_size_gib": 300}})
    new.write_text(json.dumps(changed.to_json()))
    (added,) = [
        logical_id
        for logical_id, resource in changed.to_json()["Resources"].items()
        if resource["Type"] == "AWS::EKS::Nodegroup" and logical_id.startswith("GpuPoolG6")
    ]
    assert main(["replacements", "--deployed", str(old), "--new", str(new)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "gpu-pool replacements: node groups this deploy adds:",
        f"  {new}: node group {added} (pool gpu, g6.xlarge): added",
        "gpu-pool replacements: node groups this deploy rolls (EKS replaces their nodes one at a "
        "time, respecting PodDisruptionBudgets):",
        f"  {new}: node group {GROUP} (pool gpu, g5.xlarge): rolled; launch template "
        "BlockDeviceMappings[0].Ebs.VolumeSize (disk_size_gib): 200 -> 300",
        "gpu-pool replacements: no node group is replaced or deleted",
    ]


def test_a_subnet_change_is_named():
    fewer = copy.deepcopy(EXISTING)
    fewer["cluster"]["existing"]["subnets_by_zone"]["eu-west-1b"] = ["subnet-0bbbbbbbbbbbbbbbb"]
    (loss,) = nodegroup_losses(synth(EXISTING).to_json(), synth(fewer).to_json())
    assert loss.reasons == (
        "replaced",
        'Subnets: ["subnet-0bbbbbbbbbbbbbbbb","subnet-0cccccccccccccccc"] -> '
        '["subnet-0bbbbbbbbbbbbbbbb"]',
    )


@pytest.mark.parametrize(
    "pool",
    [
        {"labels": {"accelerator": "nvidia", "workload": "batch"}},
        {"min_size": 1, "desired_size": 1, "max_size": 16},
    ],
    ids=["label", "sizes"],
)
def test_in_place_changes_are_not_named(default_template, pool):
    assert nodegroup_losses(default_template.to_json(), synth({"pool": pool}).to_json()) == []


def test_replacements_command_asks_nothing_when_nothing_is_lost(default_template, tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text(json.dumps(default_template.to_json()))
    assert main(["replacements", "--deployed", str(old), "--new", str(old)]) == 0
    assert (
        capsys.readouterr().out == "gpu-pool replacements: no node group is replaced or deleted\n"
    )


def test_replacements_command_stops_unless_confirmed(
    default_template, tmp_path, capsys, monkeypatch
):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(default_template.to_json()))
    new.write_text(json.dumps(synth({"pool": {"capacity_type": "SPOT"}}).to_json()))
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["replacements", "--deployed", str(old), "--new", str(new)]) == 2
    out, err = capsys.readouterr()
    assert (
        f'  {new}: node group {GROUP} (pool gpu, g5.xlarge): replaced; CapacityType: '
        '"ON_DEMAND" -> "SPOT"'
        in out.splitlines()
    )
    assert err == (
        "gpu-pool: replacements: not confirmed (no terminal to ask on); re-run with --yes to "
        "proceed\n"
    )
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["replacements", "--deployed", str(old), "--new", str(new)]) == 1
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["replacements", "--deployed", str(old), "--new", str(new)]) == 0
    assert main(["replacements", "--deployed", str(old), "--new", str(new), "--yes"]) == 0


def test_replacements_command_reads_the_deployed_stack_from_cloudformation(
    default_template, tmp_path
):
    import boto3
    from botocore.stub import Stubber

    out = write_assembly(tmp_path, synth({"pool": {"capacity_type": "SPOT"}}).to_json())
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    with Stubber(cloudformation) as stub:
        stub.add_response(
            "get_template",
            {"TemplateBody": json.dumps(default_template.to_json())},
            {"StackName": "GpuPool", "TemplateStage": "Original"},
        )
        assert (
            main(["replacements", "--cdk-out", str(out), "--yes"], aws=lambda _: cloudformation)
            == 0
        )
        stub.add_client_error(
            "get_template", "ValidationError", "Stack with id GpuPool does not exist"
        )
        # A new stack creates every add-on: each is looked for on the cluster, which does not
        # exist yet (EKS DescribeAddon: ResourceNotFoundException).
        eks = boto3.client("eks", region_name="us-east-1")
        new = json.loads((out / "GpuPool.template.json").read_text())
        with Stubber(eks) as eks_stub:
            for addon, cluster in addon_additions({}, new):
                eks_stub.add_client_error(
                    "describe_addon",
                    "ResourceNotFoundException",
                    "No cluster found",
                    404,
                    None,
                    {"clusterName": cluster, "addonName": addon},
                )
            clients = {"cloudformation": cloudformation, "eks": eks}
            assert main(["replacements", "--cdk-out", str(out)], aws=clients.get) == 0


def test_an_add_on_the_cluster_has_already_is_refused_before_the_deploy(tmp_path, capsys):
    """Review of #36: a cluster whose eks-node-monitoring-agent someone installed by hand: the
    deploy that creates the add-on fails (EKS CreateAddon: ResourceInUseException) and rolls
    back. replacements reads the cluster's add-ons first (DescribeAddon) and stops."""
    import boto3
    from botocore.stub import Stubber

    new = synth({}).to_json()
    # The stack as deployed before the agent was part of it (gpu-pool before #36).
    deployed = copy.deepcopy(new)
    deployed["Resources"] = {
        k: r
        for k, r in new["Resources"].items()
        if r.get("Properties", {}).get("AddonName") != "eks-node-monitoring-agent"
    }
    added = addon_additions(deployed, new)
    assert added == [("eks-node-monitoring-agent", "gpu-pool")]
    out = write_assembly(tmp_path, new)
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    eks = boto3.client("eks", region_name="us-east-1")
    with Stubber(cloudformation) as cf_stub, Stubber(eks) as eks_stub:
        cf_stub.add_response(
            "get_template",
            {"TemplateBody": json.dumps(deployed)},
            {"StackName": "GpuPool", "TemplateStage": "Original"},
        )
        eks_stub.add_response(
            "describe_addon",
            {"addon": {"addonName": "eks-node-monitoring-agent", "addonVersion": "v1.4.0-eksbuild.1"}},
            {"clusterName": "gpu-pool", "addonName": "eks-node-monitoring-agent"},
        )
        clients = {"cloudformation": cloudformation, "eks": eks}
        assert main(["replacements", "--cdk-out", str(out), "--yes"], aws=clients.get) == 2
    assert capsys.readouterr().err == (
        "gpu-pool: replacements: GpuPool creates the EKS add-on eks-node-monitoring-agent, which "
        "cluster gpu-pool has already (v1.4.0-eksbuild.1): CloudFormation's create would fail "
        "and roll the deploy back. Delete it first (aws eks delete-addon --cluster-name gpu-pool "
        "--addon-name eks-node-monitoring-agent --region us-east-1; not --preserve, whose "
        "leftover objects conflict with the add-on's creation), then deploy, which creates it "
        "again; for the node monitoring agent on a cluster the app imports, "
        "cluster.existing.node_monitoring_agent: false says the cluster has it instead\n"
    )
