"""The command on a library user's app: the pools and cluster name come from the records the
pool constructs write, in the cloud assembly (--cdk-out) or the deployed stack (--stack), not
from the bundled app's settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_pool.cli.main import main
from gpu_pool.cli.sources import stack_pools
from tests.support.aws_stubs import asg_group, stubbed
from tests.support.command import run
from tests.support.fake_kube import SCALE_UP, Scenario, autoscaler, daemon_set, node
from tests.support.node_health import GPU_READY, agent_condition
from tests.support.two_stacks import CLUSTER_NAME, POOLS_STACK

pytestmark = pytest.mark.synth

REGION = "eu-west-1"
TRAINING_TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
]


def test_smoke_test_manifest_selects_and_tolerates_a_pool_of_the_second_stack(
    two_stack_assembly, capsys
):
    code = main(["smoke-test-manifest", "--cdk-out", str(two_stack_assembly), "--pool", "training"])
    pod = yaml.safe_load(capsys.readouterr().out)
    assert code == 0
    assert pod["spec"]["nodeSelector"] == {"gpu-pool.io/pool": "training"}
    assert pod["spec"]["tolerations"] == TRAINING_TOLERATIONS
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}


def test_an_unknown_pool_lists_the_pools_the_assembly_records(two_stack_assembly, capsys):
    code = main(["smoke-test-manifest", "--cdk-out", str(two_stack_assembly), "--pool", "gpu"])
    assert code == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: --pool: no pool named 'gpu' in the pool records in '{two_stack_assembly}' "
        "(pools: inference, training)\n"
    )


def _asgs() -> Any:
    """AWS showing the pools' ASGs, answering only a query for the recorded cluster's name."""
    autoscaling = stubbed(
        "autoscaling",
        [
            (
                "describe_auto_scaling_groups",
                {"AutoScalingGroups": [asg_group("eks-inference-4ac9", {})]},
                {"Filters": [{"Name": "tag:eks:cluster-name", "Values": [CLUSTER_NAME]}]},
            )
        ],
    )
    return {"autoscaling": autoscaling, "eks": stubbed("eks", [])}


READY = {"type": "Ready", "status": "True", "message": "kubelet is posting ready status"}
GPU_HEALTHY = agent_condition("AcceleratedHardwareReady", "True", *GPU_READY)


def _cluster() -> Scenario:
    return Scenario(
        nodes=[(0, node(pool="inference", conditions=[READY, GPU_HEALTHY]))],
        daemon_sets=[daemon_set(pool="inference"), daemon_set(pool="training")],
        autoscaler=autoscaler(cluster=CLUSTER_NAME),
    )


def _doctor_lines(out: str) -> list[str]:
    """The verdict lines (not the fleet's heading and summary: test_doctor_fleet.py)."""
    return [
        line
        for line in out.splitlines()
        if line.startswith("[") and not line.startswith("[  ok] DaemonSet")
    ]


DOCTOR_OUT = [
    "[  ok] node ip-10-0-1-5.ec2.internal: Ready, nvidia.com/gpu: 1",
    "[  ok] pool training: no nodes: the pool is at zero",
    "[  ok] autoscaler: 1 ready, --node-group-auto-discovery=asg:tag="
    f"k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/{CLUSTER_NAME}",
    "[  ok] health ip-10-0-1-5.ec2.internal: AcceleratedHardwareReady=True (NvidiaGPUIsReady); "
    "repair on",
]


def test_doctor_checks_the_assemblys_pools_on_its_cluster(two_stack_assembly, tmp_path, capsys):
    code, _ = run(
        tmp_path,
        _cluster(),
        "--cdk-out",
        str(two_stack_assembly),
        aws=_asgs().__getitem__,
        command="doctor",
    )
    out = capsys.readouterr().out
    assert _doctor_lines(out) == DOCTOR_OUT
    assert code == 0


def test_verify_runs_the_smoke_test_on_a_pool_of_the_assembly(two_stack_assembly, tmp_path, capsys):
    scenario = Scenario(
        events=[(2, SCALE_UP)],
        nodes=[(4, node(pool="training"))],
        scheduled_at=6,
        succeeded_at=8,
        autoscaler=autoscaler(cluster=CLUSTER_NAME),
    )
    argv = ["--cdk-out", str(two_stack_assembly), "--pool", "training"]
    code, fake = run(tmp_path, scenario, *argv)
    assert code == 0, capsys.readouterr().out
    (created,) = fake.created
    assert created["spec"]["nodeSelector"] == {"gpu-pool.io/pool": "training"}
    assert created["spec"]["tolerations"] == TRAINING_TOLERATIONS


def _deployed_outputs(assembly: Path) -> list[dict[str, str]]:
    """The pool stack's outputs as DescribeStacks returns them once CloudFormation has resolved
    them: the imported cluster name, the region, each node group's generated name."""
    template = json.loads((assembly / f"{POOLS_STACK}.template.json").read_text())

    def resolve(value: Any) -> str:
        if isinstance(value, str):
            return value
        ((function, argument),) = value.items()
        if function == "Fn::Join":
            return argument[0].join(resolve(part) for part in argument[1])
        if function == "Fn::ImportValue":
            return CLUSTER_NAME
        if value == {"Ref": "AWS::Region"}:
            return REGION
        if function == "Fn::GetAtt" and argument[1] == "NodegroupName":
            return f"{argument[0]}-7Hq2"
        raise AssertionError(f"unexpected {value}")

    return [
        {"OutputKey": key, "OutputValue": resolve(output["Value"])}
        for key, output in template["Outputs"].items()
    ]


def _cloudformation(assembly: Path) -> Any:
    """DescribeStacks of the pool stack, request and response checked against botocore's model
    by its Stubber."""
    stack = {
        "StackName": POOLS_STACK,
        "CreationTime": "2026-12-01T00:00:00Z",
        "StackStatus": "CREATE_COMPLETE",
        "Outputs": _deployed_outputs(assembly),
    }
    return stubbed(
        "cloudformation",
        [("describe_stacks", {"Stacks": [stack]}, {"StackName": POOLS_STACK})],
    )


def test_the_deployed_stack_records_the_resolved_cluster_region_and_node_groups(
    two_stack_assembly,
):
    pools = stack_pools(POOLS_STACK, _cloudformation(two_stack_assembly))
    inference, training = pools.records
    assert (inference.name, inference.cluster_name, inference.region) == (
        "inference",
        CLUSTER_NAME,
        REGION,
    )
    (group,) = inference.node_groups
    assert (group.instance_types, group.gpus) == (("g5.xlarge",), 1)
    assert group.name is not None and group.name.endswith("-7Hq2")
    assert training.tolerations == tuple(TRAINING_TOLERATIONS)
    assert training.gpus_per_node == 4


def test_doctor_checks_the_deployed_stacks_pools(two_stack_assembly, tmp_path, capsys):
    clients = {**_asgs(), "cloudformation": _cloudformation(two_stack_assembly)}
    code, _ = run(
        tmp_path,
        _cluster(),
        "--stack",
        POOLS_STACK,
        aws=clients.__getitem__,
        command="doctor",
    )
    out = capsys.readouterr().out
    assert _doctor_lines(out) == DOCTOR_OUT
    assert code == 0


def test_an_unknown_pool_lists_the_pools_the_stack_records(two_stack_assembly, capsys):
    clients = {"cloudformation": _cloudformation(two_stack_assembly)}
    code = main(
        ["smoke-test-manifest", "--stack", POOLS_STACK, "--pool", "gpu"],
        aws=clients.__getitem__,
    )
    assert code == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: --pool: no pool named 'gpu' in the pool records of stack '{POOLS_STACK}' "
        "(pools: inference, training)\n"
    )


def test_replacements_compares_only_the_stack_named(two_stack_assembly, capsys):
    """The Stubber answers one GetTemplate, for GpuPools: a call for Platform would fail."""
    template = (two_stack_assembly / f"{POOLS_STACK}.template.json").read_text()
    cloudformation = stubbed(
        "cloudformation",
        [
            (
                "get_template",
                {"TemplateBody": template},
                {"StackName": POOLS_STACK, "TemplateStage": "Original"},
            )
        ],
    )
    argv = ["replacements", "--cdk-out", str(two_stack_assembly), "--stack", POOLS_STACK]
    assert main(argv, aws=lambda _: cloudformation) == 0
    assert (
        capsys.readouterr().out == "gpu-pool replacements: no node group is replaced or deleted\n"
    )


def test_replacements_names_the_stacks_of_the_assembly_for_an_unknown_one(
    two_stack_assembly, capsys
):
    argv = ["replacements", "--cdk-out", str(two_stack_assembly), "--stack", "Pools"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: --stack: no stack 'Pools' in {two_stack_assembly} (Platform, GpuPools)\n"
    )
