"""inspect_cluster's verdicts on API objects, as the official client hands them over."""

from __future__ import annotations

import pytest
from kubernetes import client

from gpu_pool.cli.inspect.cluster import (
    Verdict,
    asg_tag_verdicts,
    autoscaler_state,
    device_plugin_reaches,
    expected_gpu_resources,
    gpu_allocatable,
    node_ready,
)
from gpu_pool.plan.pool import plan_pool
from gpu_pool.plan.record import pool_record
from gpu_pool.settings import PoolSettings
from tests.support.aws_stubs import asg_group, stubbed
from tests.support.fake_kube import autoscaler, daemon_set, node

GPU_TAG = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"
STALE_TAG = "k8s.io/cluster-autoscaler/node-template/label/team"


def _model(data: dict, kind: str):
    """An API dict as the client returns it: its typed model."""
    response = type("Response", (), {"data": __import__("json").dumps(data)})()
    return client.ApiClient().deserialize(response, kind)


def _plugin(**kwargs):
    return _model(daemon_set(**kwargs), "V1DaemonSet")


NODE = node(name="node-1")


def test_a_plugin_that_selects_and_tolerates_the_node_is_ok():
    assert device_plugin_reaches(NODE, [_plugin()]) == Verdict(
        "ok", "device plugin", "nvidia-device-plugin-gpu selects and tolerates node-1"
    )


def test_every_plugin_that_misses_the_node_says_why():
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    }
    with_affinity = daemon_set(pool="training")
    with_affinity["spec"]["template"]["spec"]["nodeSelector"] = {}
    with_affinity["spec"]["template"]["spec"]["affinity"] = affinity
    verdict = device_plugin_reaches(
        NODE,
        [
            _plugin(node_selector={"role": "cpu"}),
            _model(with_affinity, "V1DaemonSet"),
            _plugin(pool="spot", node_selector={}, tolerations=[]),
        ],
    )
    assert verdict == Verdict(
        "fail",
        "device plugin",
        "no device plugin DaemonSet would run on node-1: "
        "nvidia-device-plugin-gpu: nodeSelector {'role': 'cpu'} does not match; "
        "nvidia-device-plugin-training: its required node affinity does not match the node; "
        "nvidia-device-plugin-spot: does not tolerate nvidia.com/gpu=true:NoSchedule",
        "its nodeSelector must match the node's gpu-pool.io/pool label and its tolerations the "
        "pool's taints (redeploy the stack; `gpu-pool doctor` shows the DaemonSet)",
    )


def test_every_untolerated_taint_is_named_with_its_value_or_none():
    tainted = node(name="node-1")
    tainted["spec"]["taints"].append({"key": "dedicated", "effect": "NoExecute"})
    verdict = device_plugin_reaches(tainted, [_plugin(tolerations=[])])
    assert verdict.detail.endswith(
        "nvidia-device-plugin-gpu: does not tolerate nvidia.com/gpu=true:NoSchedule, "
        "dedicated=:NoExecute"
    )


@pytest.mark.parametrize(
    ("conditions", "ready", "problems"),
    [
        ([{"type": "Ready", "status": "True"}], True, ""),
        (
            [
                {"type": "Ready", "status": "True"},
                {"type": "MemoryPressure", "status": "True", "message": "low memory"},
                {"type": "DiskPressure", "status": "False"},
            ],
            True,
            "MemoryPressure: low memory",
        ),
        ([{"type": "Ready", "status": "Unknown"}], False, "Ready=Unknown: "),
        ([], False, ""),
    ],
    ids=["ready", "ready-under-pressure", "unknown", "no-conditions"],
)
def test_node_ready_is_only_the_ready_condition_true(conditions, ready, problems):
    assert node_ready({"status": {"conditions": conditions}}) == (ready, problems)


@pytest.mark.parametrize(
    ("status", "gpus"),
    [
        ({"allocatable": {"nvidia.com/gpu": "8"}}, 8),
        ({"allocatable": {"nvidia.com/gpu": "x"}}, 0),
        ({}, 0),
        (None, 0),
    ],
)
def test_gpu_allocatable(status, gpus):
    assert gpu_allocatable({"status": status}) == gpus


class _Apps:
    def __init__(self, deployment=None, error=None):
        self.deployment, self.error = deployment, error

    def read_namespaced_deployment(self, name, namespace):
        assert (name, namespace) == ("cluster-autoscaler", "kube-system")
        if self.error:
            raise self.error
        return _model(self.deployment, "V1Deployment")


def test_autoscaler_flags_from_args_count_as_well_as_from_command():
    deployment = autoscaler()
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"] = container.pop("command")[1:]
    assert autoscaler_state(_Apps(deployment), "gpu-pool") == Verdict(
        "ok",
        "autoscaler",
        "1 ready, --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
        "k8s.io/cluster-autoscaler/gpu-pool",
    )


def test_an_api_error_other_than_not_found_is_not_hidden():
    with pytest.raises(client.ApiException):
        autoscaler_state(_Apps(error=client.ApiException(status=403)), "gpu-pool")


def test_asg_verdicts_go_on_past_groups_they_do_not_judge_or_find_wrong():
    two_bad = {TAINT_TAG: "true:NO_SCHEDULE", f"{TAINT_TAG}-2": "x:NO_EXECUTE"}
    prefer = {TAINT_TAG: "t:PreferNoSchedule"}
    groups = [
        asg_group("no-tags", None),
        asg_group("self-managed", {"team": "x"}),
        asg_group("cpu", {"eks:nodegroup-name": "cpu-ng"}),
        asg_group("templated", {"eks:nodegroup-name": "templated-ng"}),
        asg_group("mixed", {"eks:nodegroup-name": "mixed-ng", GPU_TAG: "1"}),
        asg_group("bad", {"eks:nodegroup-name": "bad-ng", GPU_TAG: "1", **two_bad}),
        asg_group("stale", {"eks:nodegroup-name": "stale-ng", GPU_TAG: "1", STALE_TAG: "x"}),
        asg_group("prefer", {"eks:nodegroup-name": "prefer-ng", GPU_TAG: "1", **prefer}),
        asg_group(
            "good", {"eks:nodegroup-name": "good-ng", GPU_TAG: "8", TAINT_TAG: "a:NoExecute"}
        ),
    ]
    autoscaling = stubbed(
        "autoscaling",
        [
            (
                "describe_auto_scaling_groups",
                {"AutoScalingGroups": groups},
                {"Filters": [{"Name": "tag:eks:cluster-name", "Values": ["c"]}]},
            )
        ],
    )
    eks = stubbed(
        "eks",
        [
            (
                "describe_nodegroup",
                # The groups' taints as their ASG tags name them: none is stale.
                {
                    "nodegroup": {
                        "instanceTypes": types,
                        "taints": [{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}],
                    }
                },
                {"clusterName": "c", "nodegroupName": name},
            )
            for name, types in (
                ("cpu-ng", ["m5.large"]),
                ("templated-ng", []),
                ("mixed-ng", ["g5.xlarge", "g5.12xlarge"]),
                ("bad-ng", ["g5.xlarge"]),
                ("stale-ng", ["g6.xlarge"]),
                ("prefer-ng", ["g6.xlarge"]),
                ("good-ng", ["p5.48xlarge"]),
            )
        ],
    )
    assert asg_tag_verdicts(autoscaling, eks, "c") == [
        Verdict(
            "fail",
            "ASG mixed",
            f"tag {GPU_TAG}='1', but g5.xlarge/g5.12xlarge has ? GPU(s)",
            "at zero nodes Cluster Autoscaler believes this tag: redeploy the stack so the tag "
            "writer rewrites it",
        ),
        Verdict(
            "fail",
            "ASG bad",
            f"taint tags Cluster Autoscaler ignores: {TAINT_TAG}=true:NO_SCHEDULE, "
            f"{TAINT_TAG}-2=x:NO_EXECUTE",
            "the value must be <value>:<Effect> in Kubernetes spelling (NoSchedule)",
        ),
        Verdict(
            "fail",
            "ASG stale",
            f"node-template tags for labels or taints the node group no longer has: {STALE_TAG}",
            "a stale taint stops Cluster Autoscaler scaling this group up from zero: aws "
            "autoscaling delete-tags --tags ResourceId=stale,ResourceType=auto-scaling-group,"
            "Key=<key> (the key alone), or redeploy",
        ),
        Verdict("ok", "ASG prefer", "prefer-ng: nvidia.com/gpu=1"),
        Verdict("ok", "ASG good", "good-ng: nvidia.com/gpu=8"),
    ]


def test_a_pressure_condition_without_a_message_is_still_named():
    conditions = [{"type": "Ready", "status": "True"}, {"type": "PIDPressure", "status": "True"}]
    assert node_ready({"status": {"conditions": conditions}}) == (True, "PIDPressure: ")


def test_an_autoscaler_without_a_discovery_flag_does_not_discover():
    deployment = autoscaler()
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["./cluster-autoscaler", "--cloud-provider=aws"]
    assert autoscaler_state(_Apps(deployment), "gpu-pool") == Verdict(
        "fail",
        "autoscaler",
        "runs, but does not discover this cluster's ASGs (no discovery flag)",
        "its --node-group-auto-discovery must name k8s.io/cluster-autoscaler/gpu-pool",
    )


def test_only_a_sharing_pools_node_of_a_known_type_has_expected_shares():
    shared = pool_record(
        plan_pool(PoolSettings(sharing={"mode": "time-slicing", "replicas": 4})), None, None
    )
    whole = pool_record(plan_pool(PoolSettings()), None, None)
    g5 = node(name="node-1", instance_type="g5.12xlarge")
    assert expected_gpu_resources(shared, g5) == {"nvidia.com/gpu": 16}
    assert expected_gpu_resources(whole, g5) is None
    assert expected_gpu_resources(shared, NODE) is None  # no instance-type label
    cpu = node(name="node-1", instance_type="m5.large")
    assert expected_gpu_resources(shared, cpu) is None  # not a GPU type


def test_a_dra_pools_asg_must_advertise_no_nvidia_gpu():
    """A DRA driver pool's node has no nvidia.com/gpu (its GPUs are ResourceSlice devices): the
    group's tag is 0, and a GPU count there is the tag CA would scale up wrongly on."""
    pool_tag = "k8s.io/cluster-autoscaler/node-template/label/gpu-pool.io/pool"
    dra = pool_record(
        plan_pool(PoolSettings(name="dra", gpu_software="dra-driver", min_size=1, desired_size=1)),
        None,
        None,
    )
    groups = [
        asg_group("zero", {"eks:nodegroup-name": "zero-ng", GPU_TAG: "0", pool_tag: "dra"}),
        asg_group("one", {"eks:nodegroup-name": "one-ng", GPU_TAG: "1", pool_tag: "dra"}),
    ]
    autoscaling = stubbed(
        "autoscaling",
        [
            (
                "describe_auto_scaling_groups",
                {"AutoScalingGroups": groups},
                {"Filters": [{"Name": "tag:eks:cluster-name", "Values": ["c"]}]},
            )
        ],
    )
    eks = stubbed(
        "eks",
        [
            (
                "describe_nodegroup",
                {
                    "nodegroup": {
                        "instanceTypes": ["g5.xlarge"],
                        "labels": {"gpu-pool.io/pool": "dra"},
                        "taints": [],
                    }
                },
                {"clusterName": "c", "nodegroupName": name},
            )
            for name in ("zero-ng", "one-ng")
        ],
    )
    assert asg_tag_verdicts(autoscaling, eks, "c", [dra]) == [
        Verdict("ok", "ASG zero", "zero-ng: nvidia.com/gpu=0"),
        Verdict(
            "fail",
            "ASG one",
            f"tag {GPU_TAG}='1', but g5.xlarge advertises 0 with the DRA driver (its GPUs are "
            "ResourceSlice devices)",
            "at zero nodes Cluster Autoscaler believes this tag: redeploy the stack so the tag "
            "writer rewrites it",
        ),
    ]
