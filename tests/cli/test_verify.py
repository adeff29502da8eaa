"""`gpu-pool verify` and `doctor` against a scripted API server on 127.0.0.1."""

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from gpu_pool.cli.main import main
from tests.support.aws_stubs import stubbed
from tests.support.clock import FakeClock
from tests.support.command import run
from tests.support.fake_kube import SCALE_UP, Scenario, autoscaler, daemon_set, node
from tests.support.paths import ROOT


def scale_up_to(stage_tick_node, **kw):
    return Scenario(events=[(2, SCALE_UP)], nodes=[(4, stage_tick_node)], **kw)


def test_happy_path_reports_every_stage_and_cleans_up(tmp_path, capsys):
    scenario = Scenario(
        events=[(2, SCALE_UP)],
        nodes=[(4, node(ready=False, gpus=0)), (6, node(ready=True, gpus=0)), (8, node())],
        scheduled_at=10,
        succeeded_at=12,
    )
    code, fake = run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 0
    stages = [
        line.split("] ", 1)[1].split(":")[0] for line in out.splitlines() if line.startswith("[")
    ]
    assert stages == [
        "submitted pod default/" + fake.deleted[0] + " (nvidia.com/gpu",
        "pending",
        "scale-up",
        "node joined",
        "node ready",
        "gpu allocatable",
        "scheduled",
        "pod succeeded; nvidia-smi output",
    ]
    assert "eks-GpuPoolG5Xlarge-4ac9 0->1" in out  # the scale-up names the node group
    lines = out.splitlines()
    log_at = lines.index("| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: 13.0 |")
    assert lines[log_at + 1 : log_at + 3] == ["| 0 NVIDIA A10G |", "verify: OK"]
    (created,) = fake.created
    assert created["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert created["spec"]["nodeSelector"] == {"gpu-pool.io/pool": "gpu"}
    assert fake.deleted == [created["metadata"]["name"]]


@pytest.mark.parametrize(
    ("scenario", "cause", "evidence"),
    [
        pytest.param(
            Scenario(
                events=[
                    (
                        2,
                        (
                            "NotTriggerScaleUp",
                            "pod didn't trigger scale-up: 1 Insufficient nvidia.com/gpu",
                        ),
                    )
                ]
            ),
            "Cluster Autoscaler says no node group would help (node template)",
            "event NotTriggerScaleUp: pod didn't trigger scale-up: 1 Insufficient nvidia.com/gpu",
            id="node-template",
        ),
        pytest.param(
            scale_up_to(node(gpus=0), daemon_sets=[]),
            "the node is Ready but advertises no nvidia.com/gpu (device plugin)",
            "no DaemonSet labelled app.kubernetes.io/name=nvidia-device-plugin in kube-system",
            id="device-plugin-missing",
        ),
        pytest.param(
            scale_up_to(node(gpus=0), daemon_sets=[daemon_set(tolerations=[])]),
            "the node is Ready but advertises no nvidia.com/gpu (device plugin)",
            "no device plugin DaemonSet would run on ip-10-0-1-5.ec2.internal: "
            "nvidia-device-plugin-gpu: does not tolerate nvidia.com/gpu=true:NoSchedule",
            id="device-plugin-not-tolerating",
        ),
        pytest.param(
            scale_up_to(node(gpus=0), daemon_sets=[daemon_set(node_selector={"role": "cpu"})]),
            "the node is Ready but advertises no nvidia.com/gpu (device plugin)",
            "no device plugin DaemonSet would run on ip-10-0-1-5.ec2.internal: "
            "nvidia-device-plugin-gpu: nodeSelector {'role': 'cpu'} does not match",
            id="device-plugin-not-selecting",
        ),
        pytest.param(
            scale_up_to(
                node(
                    ready=False,
                    gpus=0,
                    conditions=[
                        {"type": "Ready", "status": "False", "message": "PLEG is not healthy"},
                        {
                            "type": "DiskPressure",
                            "status": "True",
                            "message": "kubelet has disk pressure",
                        },
                    ],
                )
            ),
            "the node joined but never became Ready",
            "ip-10-0-1-5.ec2.internal: Ready=False: PLEG is not healthy; DiskPressure: kubelet has disk pressure",
            id="node-not-ready",
        ),
        pytest.param(
            Scenario(autoscaler=None),
            "no scale-up event: Cluster Autoscaler is not running or not discovering the ASG",
            "no Deployment cluster-autoscaler in kube-system",
            id="no-autoscaler",
        ),
        pytest.param(
            Scenario(autoscaler=autoscaler(cluster="some-other-cluster")),
            "no scale-up event: Cluster Autoscaler is not running or not discovering the ASG",
            "runs, but does not discover this cluster's ASGs",
            id="autoscaler-not-discovering",
        ),
    ],
)
def test_each_stall_is_classified_with_evidence_and_the_pod_deleted(
    tmp_path, capsys, scenario, cause, evidence
):
    code, fake = run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 1
    assert f": {cause}\n" in out
    assert f"  evidence: {evidence}" in out
    assert "  fix: " in out
    assert fake.deleted == [fake.created[0]["metadata"]["name"]]


def test_capacity_errors_from_the_asg(tmp_path, capsys):
    autoscaling = stubbed(
        "autoscaling",
        [
            (
                "describe_scaling_activities",
                {
                    "Activities": [
                        {
                            "ActivityId": "a1",
                            "AutoScalingGroupName": "eks-GpuPoolG5Xlarge-4ac9",
                            "Cause": "scale-up",
                            "StartTime": "2026-12-02T10:00:00Z",
                            "StatusCode": "Failed",
                            "StatusMessage": "We currently do not have sufficient g5.xlarge capacity in the "
                            "Availability Zone you requested (us-east-1a). (InsufficientInstanceCapacity)",
                        }
                    ]
                },
                {"MaxRecords": 20},
            )
        ],
    )
    code, fake = run(tmp_path, Scenario(events=[(2, SCALE_UP)]), aws=lambda service: autoscaling)
    out = capsys.readouterr().out
    assert code == 1
    assert ": the ASG could not launch an instance (capacity)\n" in out
    assert "InsufficientInstanceCapacity" in out
    assert fake.deleted


class _InterruptedClock(FakeClock):
    """Ctrl-C during the first wait between polls."""

    def sleep(self, seconds):
        raise KeyboardInterrupt


def test_interrupt_still_deletes_the_pod(tmp_path, capsys):
    code, fake = run(tmp_path, Scenario(), clock=_InterruptedClock())
    assert code == 130
    assert fake.deleted == [fake.created[0]["metadata"]["name"]]


def test_unreachable_cluster_fails_fast_with_a_clear_message(tmp_path, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        '{"apiVersion": "v1", "kind": "Config", "current-context": "x",'
        '"clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],'
        '"users": [{"name": "u", "user": {}}],'
        '"contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}'
    )
    start = time.monotonic()
    code = main(["verify", "--cdk-json", str(ROOT / "cdk.json"), "--kubeconfig", str(kubeconfig)])
    assert time.monotonic() - start < 10
    assert code == 2
    assert capsys.readouterr().err.startswith(
        "gpu-pool: cannot reach the Kubernetes API at http://127.0.0.1:9 within 5s"
    )


def test_doctor_checks_nodes_plugin_autoscaler_and_asg_tags(tmp_path, capsys):
    group = {
        "AutoScalingGroupName": "eks-GpuPoolG5Xlarge-4ac9",
        "MinSize": 0,
        "MaxSize": 8,
        "DesiredCapacity": 1,
        "DefaultCooldown": 300,
        "AvailabilityZones": ["us-east-1a"],
        "HealthCheckType": "EC2",
        "CreatedTime": "2026-12-01T00:00:00Z",
        "Tags": [
            {"Key": "eks:nodegroup-name", "Value": "GpuPoolG5Xlarge-abc"},
            {
                "Key": "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu",
                "Value": "4",
            },
            {
                "Key": "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu",
                "Value": "true:NoSchedule",
            },
        ],
    }
    autoscaling = stubbed(
        "autoscaling",
        [
            (
                "describe_auto_scaling_groups",
                {"AutoScalingGroups": [group]},
                {"Filters": [{"Name": "tag:eks:cluster-name", "Values": ["gpu-pool"]}]},
            )
        ],
    )
    eks = stubbed(
        "eks",
        [
            (
                "describe_nodegroup",
                {"nodegroup": {"instanceTypes": ["g5.xlarge"]}},
                {"clusterName": "gpu-pool", "nodegroupName": "GpuPoolG5Xlarge-abc"},
            )
        ],
    )
    clients = {"autoscaling": autoscaling, "eks": eks}
    scenario = Scenario(nodes=[(0, node())], daemon_sets=[daemon_set(desired=1, ready=0)])
    code, _ = run(tmp_path, scenario, aws=clients.__getitem__, command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == "[  ok] node ip-10-0-1-5.ec2.internal: Ready, nvidia.com/gpu: 1"
    assert "[fail] DaemonSet nvidia-device-plugin-gpu: 0/1 ready" in out
    assert any(
        line.startswith("[  ok] autoscaler: 1 ready, --node-group-auto-discovery=") for line in out
    )
    assert (
        "[fail] ASG eks-GpuPoolG5Xlarge-4ac9: tag k8s.io/cluster-autoscaler/node-template/"
        "resources/nvidia.com/gpu='4', but g5.xlarge has 1 GPU(s)"
    ) in out


def test_smoke_test_manifest_is_the_pod_verify_submits(capsys):
    import yaml

    assert main(["smoke-test-manifest", "--cdk-json", str(ROOT / "cdk.json")]) == 0
    manifest = yaml.safe_load(capsys.readouterr().out)
    assert manifest["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert manifest["spec"]["containers"][0]["command"] == ["nvidia-smi"]


TWO_POOLS = {
    "pools": {
        "inference": {},
        "training": {
            "instance_types": ["p5.48xlarge"],
            "labels": {"workload": "training"},
            "taints": [
                {"key": "nvidia.com/gpu", "value": "true"},
                {"key": "dedicated", "value": "training"},
            ],
        },
    }
}


def _two_pools_config(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text(json.dumps(TWO_POOLS))
    return str(path)


def test_verify_with_several_pools_needs_pool(tmp_path, capsys):
    code, fake = run(tmp_path, Scenario(), "--config", _two_pools_config(tmp_path))
    assert code == 2
    assert capsys.readouterr().err == (
        "gpu-pool: --pool: the settings describe several pools (inference, training); name one\n"
    )
    assert fake.created == []


def test_verify_pool_targets_that_pool_and_follows_its_node(tmp_path, capsys):
    training_node = node(name="ip-10-0-2-9.ec2.internal", pool="training", gpus=8)
    scenario = Scenario(
        events=[(2, SCALE_UP)],
        nodes=[(4, training_node)],
        scheduled_at=6,
        succeeded_at=8,
        daemon_sets=[daemon_set(pool="inference"), daemon_set(pool="training")],
    )
    config = _two_pools_config(tmp_path)
    code, fake = run(tmp_path, scenario, "--config", config, "--pool", "training")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "node joined: ip-10-0-2-9.ec2.internal" in out
    assert "gpu allocatable: nvidia.com/gpu: 8" in out
    (created,) = fake.created
    assert created["spec"]["nodeSelector"] == {"gpu-pool.io/pool": "training"}
    assert created["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
    ]


def test_verify_pool_ignores_another_pools_new_node(tmp_path, capsys):
    """A node that joins the inference pool is not the training pod's node."""
    scenario = Scenario(
        events=[(2, SCALE_UP)], nodes=[(4, node(pool="inference"))], scheduled_at=None
    )
    config = _two_pools_config(tmp_path)
    code, _ = run(tmp_path, scenario, "--config", config, "--pool", "training")
    out = capsys.readouterr().out
    assert code == 1
    assert "] node joined" not in out
    assert "verify: FAILED while waiting for 'node joined'" in out


def test_unknown_pool_is_a_usage_error(tmp_path, capsys):
    code, _ = run(tmp_path, Scenario(), "--config", _two_pools_config(tmp_path), "--pool", "x")
    assert code == 2
    assert capsys.readouterr().err == (
        "gpu-pool: --pool: no pool named 'x' in the settings (pools: inference, training)\n"
    )


def test_doctor_checks_every_pool(tmp_path, capsys):
    scenario = Scenario(
        nodes=[(0, node(pool="training", gpus=8))],
        daemon_sets=[daemon_set(pool="inference"), daemon_set(pool="training")],
    )
    code, _ = run(tmp_path, scenario, "--config", _two_pools_config(tmp_path), command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "[  ok] pool inference: no nodes: the pool is at zero",
        "[  ok] node ip-10-0-1-5.ec2.internal: Ready, nvidia.com/gpu: 8",
    ]
    assert "[  ok] DaemonSet nvidia-device-plugin-training: 1/1 ready" in out
    assert code == 0


def test_smoke_test_manifest_for_a_pool(tmp_path, capsys):
    import yaml

    argv = ["smoke-test-manifest", "--cdk-json", str(ROOT / "cdk.json")]
    assert main([*argv, "--config", _two_pools_config(tmp_path), "--pool", "training"]) == 0
    manifest = yaml.safe_load(capsys.readouterr().out)
    assert manifest["spec"]["nodeSelector"] == {"gpu-pool.io/pool": "training"}


STAGE_STALLS = {
    # stage whose timeout is short, the scenario that stalls there, the cause verify names
    "scale-up": (Scenario(), "no scale-up event although Cluster Autoscaler runs"),
    "node-join": (
        Scenario(events=[(1, SCALE_UP)]),
        "scale-up was decided but no node joined",
    ),
    "node-ready": (
        scale_up_to(node(ready=False, gpus=0)),
        "the node joined but never became Ready",
    ),
    "gpu": (
        scale_up_to(node(gpus=0), daemon_sets=[daemon_set(tolerations=[])]),
        "the node is Ready but advertises no nvidia.com/gpu (device plugin)",
    ),
    "run": (
        Scenario(events=[(1, SCALE_UP)], nodes=[(2, node())], scheduled_at=3),
        "the pod was scheduled but did not finish",
    ),
}


class _BoundedClock(FakeClock):
    """A fake clock that fails the test once a run outlasts every short timeout: the stall
    was not judged by the stage's own."""

    def __init__(self, stage):
        super().__init__()
        self.stage = stage
        self.start = self.time

    def sleep(self, seconds):
        super().sleep(seconds)
        if self.time - self.start > 60:
            raise AssertionError(f"the {self.stage} stall was not judged by --{self.stage}-timeout")


@pytest.mark.parametrize(
    ("stage", "scenario", "cause"),
    [(k, *v) for k, v in STAGE_STALLS.items()],
    ids=STAGE_STALLS.keys(),
)
def test_each_stage_stalls_on_its_own_timeout(tmp_path, capsys, stage, scenario, cause):
    """Only the stage under test has a short timeout; every other stage's is an hour."""
    timeouts = []
    for name in ("scale-up", "node-join", "node-ready", "gpu", "run"):
        timeouts += [f"--{name}-timeout", "5" if name == stage else "3600"]
    clock = _BoundedClock(stage)
    code, _ = run(tmp_path, scenario, *timeouts, clock=clock)
    assert code == 1
    assert f": {cause}\n" in capsys.readouterr().out


def test_the_smoke_test_pod_selects_the_pool_tolerates_its_taints_and_asks_for_gpus():
    from gpu_pool.cli.smoke_test import smoke_test_pod
    from gpu_pool.plan.pool import plan_pool
    from gpu_pool.plan.record import pool_record
    from gpu_pool.settings import PoolSettings

    taint = {"key": "a", "value": "b", "effect": "NoExecute"}
    pool = pool_record(plan_pool(PoolSettings(taints=[taint])), "gpu-pool", None)
    assert smoke_test_pod(pool) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "gpu-pool-smoke-test",
            "labels": {"app.kubernetes.io/name": "gpu-pool-smoke-test"},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"gpu-pool.io/pool": "gpu"},
            "tolerations": [{"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute"}],
            "containers": [
                {
                    "name": "nvidia-smi",
                    "image": "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04",
                    "command": ["nvidia-smi"],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    two = smoke_test_pod(pool, name="p", gpus=2)
    assert two["metadata"]["name"] == "p"
    assert two["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "2"}}


def test_the_system_clock_sleeps_and_reads_monotonic_time():
    from gpu_pool.cli.commands.verify.state import SystemClock

    clock = SystemClock()
    before = clock.now()
    clock.sleep(0.01)
    assert clock.now() - before >= 0.01


def _settled_node(minutes: float) -> dict:
    """A pool node Ready for `minutes`, advertising no GPU (its plugin does not run there)."""
    since = datetime.now(UTC) - timedelta(minutes=minutes)
    ready = {
        "type": "Ready",
        "status": "True",
        "message": "kubelet is posting ready status",
        "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return node(name="ip-10-0-9-9.ec2.internal", gpus=0, conditions=[ready])


def test_a_pool_node_ready_for_long_without_gpus_is_judged_before_the_autoscaler(
    tmp_path, capsys
):
    """Cluster Autoscaler scales nothing up while the pool has a GPU-labelled node without
    GPUs (it counts it as capacity on the way), so a pod pending beside such a node is the
    plugin's stall, not the autoscaler's (found on the real control plane, tests/e2e)."""
    scenario = Scenario(autoscaler=None, standing_nodes=[_settled_node(30)], daemon_sets=[])
    code, _ = run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 1
    assert (
        "verify: FAILED while waiting for 'scale-up': the node is Ready but advertises no "
        "nvidia.com/gpu (device plugin)"
    ) in out, out


def test_a_pool_node_ready_for_less_than_the_gpu_timeout_is_not_blamed_yet(tmp_path, capsys):
    """A node Ready for less than --gpu-timeout may still be starting its plugin: the stall
    stays the autoscaler's."""
    scenario = Scenario(autoscaler=None, standing_nodes=[_settled_node(0)], daemon_sets=[])
    code, _ = run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 1
    assert "no scale-up event: Cluster Autoscaler is not running" in out, out


def test_a_pod_that_ran_within_one_poll_is_still_said_to_be_scheduled(tmp_path, capsys):
    """Scheduled, run and done between two polls (seen on the real control plane, tests/e2e):
    the report still says where it was scheduled before its output."""
    scenario = Scenario(
        nodes=[(0, node())], events=[(0, SCALE_UP)], scheduled_at=1, succeeded_at=1
    )
    code, _ = run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 0, out
    stages = [line.split("] ", 1)[1] for line in out.splitlines() if line.startswith("[")]
    assert stages[-2:] == [
        "scheduled: on ip-10-0-1-5.ec2.internal",
        "pod succeeded; nvidia-smi output:",
    ], out
