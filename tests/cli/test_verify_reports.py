"""What `gpu-pool verify` prints, line for line: every stage of a run that succeeds, and the
complete report (cause, evidence, fix) of every way a run fails, for both provisioners. The
local fake API server plays the cluster, botocore's Stubber the Auto Scaling API."""

from __future__ import annotations

import re

import pytest

from tests.support.aws_stubs import stubbed
from tests.support.command import run
from tests.support.fake_kube import (
    SCALE_UP,
    Scenario,
    autoscaler,
    condition,
    node,
    node_claim,
)
from tests.support.karpenter_scenarios import (
    LAUNCHED,
    NOT_JOINED_FIX,
    NOT_LAUNCHED,
    NOT_LAUNCHED_FIX,
    UNREGISTERED_CLAIM,
    karpenter_run,
    scenario,
)

NODE = "ip-10-0-1-5.ec2.internal"
SCALE_UP_LINE = "scale-up: pod triggered scale-up: [{eks-GpuPoolG5Xlarge-4ac9 0->1 (max: 8)}]"
# A container log longer than the 500 characters the report keeps, on one line.
LONG_LOG = "".join(f"{i:04d}" for i in range(150)) + " NVIDIA-SMI has failed"
POD_EVENTS = [
    (1, ("Scheduled", f"Successfully assigned default/pod to {NODE}")),
    (1, ("Pulling", "Pulling image nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04")),
    (1, ("Pulled", "Successfully pulled image in 41.2s")),
    (1, ("Created", "Created container nvidia-smi")),
    (1, ("Started", "Started container nvidia-smi")),
]


def stage_lines(out: str) -> list[str]:
    """The stage lines without their times."""
    return [line.split("] ", 1)[1] for line in out.splitlines() if line.startswith("[")]


def report(out: str) -> list[str]:
    """The failure report: from `verify: FAILED` to the pod's deletion."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("verify: FAILED"))
    end = next(i for i, line in enumerate(lines) if line.startswith("deleted pod"))
    return lines[start:end]


def test_a_successful_run_prints_each_stage_with_its_detail_and_deletes_the_pod_at_once(
    tmp_path, capsys
):
    scenario = Scenario(
        events=[(1, ("FailedScheduling", "0/3 nodes are available")), (2, SCALE_UP)]
        # A later NotTriggerScaleUp (for another group) does not undo the decision.
        + [(5, ("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size"))],
        # A node the pool had before the pod is listed first; it is not the pod's node.
        standing_nodes=[node(name="ip-10-0-9-9.ec2.internal")],
        nodes=[(4, node())],
        scheduled_at=6,
        succeeded_at=8,
        log=b"| NVIDIA-SMI 580.95.05 |\n| 0 NVIDIA A10G \xff|",
    )
    code, fake = run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 0, out
    (pod,) = fake.created
    name = pod["metadata"]["name"]
    assert re.fullmatch(r"gpu-pool-smoke-test-[0-9a-f]{6}", name)
    assert out.splitlines()[0] == (f"[    0.0s] submitted pod default/{name} (nvidia.com/gpu: 1)")
    assert stage_lines(out) == [
        f"submitted pod default/{name} (nvidia.com/gpu: 1)",
        "pending",
        SCALE_UP_LINE,
        f"node joined: {NODE}",
        f"node ready: {NODE}",
        "gpu allocatable: nvidia.com/gpu: 1",
        f"scheduled: on {NODE}",
        "pod succeeded; nvidia-smi output:",
    ]
    # Bytes that are not UTF-8 are shown, replaced, rather than ending the run.
    assert out.splitlines()[-4:] == [
        "| NVIDIA-SMI 580.95.05 |",
        "| 0 NVIDIA A10G \ufffd|",
        "verify: OK",
        f"deleted pod default/{name}",
    ]
    assert fake.deleted == [name]
    assert fake.delete_queries == [{"gracePeriodSeconds": ["0"]}]


def _capacity_aws(status):
    activity = {
        "ActivityId": "a1",
        "AutoScalingGroupName": "eks-GpuPoolG5Xlarge-4ac9",
        "Cause": "scale-up",
        "StartTime": "2026-12-02T10:00:00Z",
        "StatusCode": status,
        "StatusMessage": "We currently do not have sufficient g5.xlarge capacity "
        "(InsufficientInstanceCapacity)",
    }
    autoscaling = stubbed(
        "autoscaling",
        [("describe_scaling_activities", {"Activities": [activity]}, {"MaxRecords": 20})],
    )
    return lambda service: autoscaling


AUTOSCALER_READY = (
    "1 ready, --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
    "k8s.io/cluster-autoscaler/gpu-pool"
)

# A failed or a cancelled launch activity reads the same.
NO_CAPACITY_REPORT = [
    "verify: FAILED while waiting for 'node joined': the ASG could not launch an "
    "instance (capacity)",
    f"  evidence: {SCALE_UP_LINE}",
    "  evidence: ASG eks-GpuPoolG5Xlarge-4ac9: We currently do not have sufficient "
    "g5.xlarge capacity (InsufficientInstanceCapacity)",
    "  fix: add zones to pool.zones or instance types to the entry, use capacity "
    "blocks/reservations, or retry later",
]

# (scenario, the ASG activity status AWS reports or None for no AWS, the report; POD = the pod)
CASES = {
    "pod-failed": (
        Scenario(
            events=[(1, SCALE_UP)],
            nodes=[(2, node())],
            scheduled_at=3,
            failed_at=4,
            log=LONG_LOG,
        ),
        None,
        [
            "verify: FAILED while waiting for 'pod succeeded': the pod ran but failed",
            f"  evidence: container log: {LONG_LOG[-500:]}",
            "  fix: nvidia-smi failed on the node: check the driver with `kubectl debug "
            "node/<node>` and the AMI type",
        ],
    ),
    "scheduled-not-finished": (
        Scenario(events=[(1, SCALE_UP), *POD_EVENTS], nodes=[(2, node())], scheduled_at=3),
        None,
        [
            "verify: FAILED while waiting for 'pod succeeded': the pod was scheduled but did "
            "not finish",
            *[f"  evidence: event {reason}: {message}" for _, (reason, message) in POD_EVENTS],
            "  fix: usually a slow image pull: raise --run-timeout, or check the events",
        ],
    ),
    "gpu-but-not-scheduled": (
        Scenario(events=[(1, SCALE_UP)], nodes=[(2, node())]),
        None,
        [
            "verify: FAILED while waiting for 'scheduled': the node has a GPU but the pod was "
            "not scheduled",
            f"  evidence: event TriggeredScaleUp: {SCALE_UP[1]}",
            "  fix: another pod may hold the GPU; check `kubectl describe pod`",
        ],
    ),
    "plugin-runs-but-no-gpu": (
        Scenario(events=[(1, SCALE_UP)], nodes=[(2, node(gpus=0))]),
        None,
        [
            "verify: FAILED while waiting for 'gpu allocatable': the node is Ready but "
            "advertises no nvidia.com/gpu (device plugin)",
            f"  evidence: nvidia-device-plugin-gpu selects and tolerates {NODE}",
            "  fix: the plugin runs there: check its pod logs on the node",
        ],
    ),
    "node-never-ready": (
        Scenario(events=[(1, SCALE_UP)], nodes=[(2, node(ready=False, gpus=0))]),
        None,
        [
            "verify: FAILED while waiting for 'node ready': the node joined but never became Ready",
            f"  evidence: {NODE}: Ready=False: container runtime network not ready",
            "  fix: look at kubelet on the node (disk pressure, driver): `kubectl describe "
            "node`, or the EC2 console output",
        ],
    ),
    "no-node-without-aws": (
        Scenario(events=[(1, SCALE_UP)]),
        None,
        [
            "verify: FAILED while waiting for 'node joined': scale-up was decided but no node "
            "joined",
            f"  evidence: {SCALE_UP_LINE}",
            "  fix: check the ASG's activity history in the EC2 console (capacity, quotas, "
            "subnets)",
        ],
    ),
    "launch-failed": (
        Scenario(events=[(1, SCALE_UP)]),
        "Failed",
        NO_CAPACITY_REPORT,
    ),
    "launch-cancelled": (
        Scenario(events=[(1, SCALE_UP)]),
        "Cancelled",
        NO_CAPACITY_REPORT,
    ),
    "node-template": (
        Scenario(
            events=[
                (
                    1,
                    (
                        "NotTriggerScaleUp",
                        "pod didn't trigger scale-up: 1 Insufficient nvidia.com/gpu",
                    ),
                )
            ]
        ),
        None,
        [
            "verify: FAILED while waiting for 'scale-up': Cluster Autoscaler says no node group "
            "would help (node template)",
            "  evidence: event NotTriggerScaleUp: pod didn't trigger scale-up: 1 Insufficient "
            "nvidia.com/gpu",
            "  fix: its zero-node template comes from the ASG tags: run `gpu-pool doctor` to "
            "compare them with the pool (GPU count, labels, taint value:Effect)",
        ],
    ),
    "no-scale-up-autoscaler-runs": (
        Scenario(events=[(1, ("FailedScheduling", "0/3 nodes are available"))]),
        None,
        [
            "verify: FAILED while waiting for 'scale-up': no scale-up event although Cluster "
            "Autoscaler runs",
            f"  evidence: {AUTOSCALER_READY}",
            "  evidence: event FailedScheduling: 0/3 nodes are available",
            "  fix: read its log: kubectl -n kube-system logs deploy/cluster-autoscaler | grep POD",
        ],
    ),
    "no-scale-up-autoscaler-not-ready": (
        Scenario(autoscaler=autoscaler(ready=0)),
        None,
        [
            "verify: FAILED while waiting for 'scale-up': no scale-up event: Cluster Autoscaler "
            "is not running or not discovering the ASG",
            "  evidence: cluster-autoscaler has no ready replica",
            "  fix: kubectl -n kube-system logs deploy/cluster-autoscaler",
        ],
    ),
}


@pytest.mark.parametrize(("scenario", "activity", "expected"), CASES.values(), ids=CASES.keys())
def test_each_failure_report_line_for_line(tmp_path, capsys, scenario, activity, expected):
    aws = _capacity_aws(activity) if activity else None
    code, fake = run(tmp_path, scenario, aws=aws)
    out = capsys.readouterr().out
    assert code == 1
    name = fake.created[0]["metadata"]["name"]
    assert report(out) == [line.replace("POD", name) for line in expected]
    assert fake.deleted == [name]


# -- Karpenter ----------------------------------------------------------------------------------


def test_a_claim_whose_type_is_not_chosen_yet_is_still_the_scale_up(tmp_path, capsys):
    claim = node_claim("gpu-pool-gpu-x7k2p", "gpu", instance_type=None)
    state = scenario(node_claims=[(1, claim)], nodes=[(2, node())], scheduled_at=3, succeeded_at=4)
    code, _ = karpenter_run(tmp_path, state)
    out = capsys.readouterr().out
    assert code == 0, out
    assert stage_lines(out)[2] == (
        "scale-up: Karpenter NodeClaim gpu-pool-gpu-x7k2p (an instance type not chosen yet)"
    )


INSUFFICIENT_CAPACITY = (
    "InsufficientCapacityError: all requested instance types were unavailable during launch"
)


def _not_launched(launched: str) -> list[str]:
    """The report on the pod's NodeClaim whose Launched condition says `launched`."""
    return [
        "verify: FAILED while waiting for 'node joined': the NodeClaim was not launched "
        "(capacity or IAM)",
        f"  evidence: NodeClaim gpu-pool-gpu-x7k2p: Launched={launched}",
        f"  fix: {NOT_LAUNCHED_FIX}",
    ]


KARPENTER_CASES = {
    "another-pools-claim-is-not-the-scale-up": (
        scenario(node_claims=[(1, node_claim("gpu-pool-other-abcde", "other"))]),
        [
            "verify: FAILED while waiting for 'scale-up': no NodeClaim although Karpenter runs: "
            "the NodePool's requirements, limits or EC2NodeClass let no instance type serve "
            "the pod",
            "  evidence: NodePool gpu-pool-gpu: Ready",
            "  evidence: EC2NodeClass gpu-pool-gpu: Ready",
            "  fix: read the pod's events (Karpenter says which requirement failed) and its "
            "log: kubectl -n kube-system logs deploy/karpenter | grep POD",
        ],
    ),
    "launch-failed-without-a-reason": (
        scenario(
            node_claims=[
                (1, node_claim("gpu-pool-gpu-x7k2p", "gpu", condition("Launched", "False", "", "")))
            ]
        ),
        _not_launched("no reason given"),
    ),
    "launch-failed-message-only": (
        scenario(
            node_claims=[
                (
                    1,
                    node_claim(
                        "gpu-pool-gpu-x7k2p",
                        "gpu",
                        condition("Launched", "False", "", "UnauthorizedOperation: not authorized"),
                    ),
                )
            ]
        ),
        _not_launched("UnauthorizedOperation: not authorized"),
    ),
    "claim-deleted-after-failing": (
        # Karpenter deletes a claim it could not launch; the report keeps what it said.
        scenario(
            node_claims=[
                (1, node_claim("gpu-pool-gpu-x7k2p", "gpu", NOT_LAUNCHED)),
                (2, {**node_claim("gpu-pool-gpu-x7k2p", "gpu"), "gone": True}),
            ]
        ),
        _not_launched(INSUFFICIENT_CAPACITY),
    ),
    "judged-by-its-own-claim-not-an-older-one": (
        scenario(
            node_claims=[
                (0, node_claim("gpu-pool-gpu-older", "gpu", LAUNCHED)),
                (1, node_claim("gpu-pool-gpu-x7k2p", "gpu")),
                (2, node_claim("gpu-pool-gpu-x7k2p", "gpu", NOT_LAUNCHED)),
            ]
        ),
        _not_launched(INSUFFICIENT_CAPACITY),
    ),
    "launched-no-other-condition-yet": (
        scenario(node_claims=[(1, node_claim("gpu-pool-gpu-x7k2p", "gpu", LAUNCHED))]),
        [
            "verify: FAILED while waiting for 'node joined': the NodeClaim launched but its node "
            "never joined the cluster",
            "  evidence: NodeClaim gpu-pool-gpu-x7k2p: Launched",
            f"  fix: {NOT_JOINED_FIX}",
        ],
    ),
    "launched-not-registered-not-ready": (
        scenario(
            node_claims=[
                (
                    1,
                    UNREGISTERED_CLAIM,
                )
            ]
        ),
        [
            "verify: FAILED while waiting for 'node joined': the NodeClaim launched but its node "
            "never joined the cluster",
            "  evidence: NodeClaim gpu-pool-gpu-x7k2p: Registered: AwaitingRegistration; Ready: "
            "NotRegistered: not registered",
            f"  fix: {NOT_JOINED_FIX}",
        ],
    ),
}


@pytest.mark.parametrize(
    ("scenario", "expected"), KARPENTER_CASES.values(), ids=KARPENTER_CASES.keys()
)
def test_each_karpenter_failure_report_line_for_line(tmp_path, capsys, scenario, expected):
    code, fake = karpenter_run(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 1
    name = fake.created[0]["metadata"]["name"]
    assert report(out) == [line.replace("POD", name) for line in expected]


# -- timeouts at their boundary ------------------------------------------------------------------

T = 3  # the timeout of the stage under test, in fake-clock ticks


def _boundary(stage_timeout: str, **scenario) -> tuple[str, Scenario]:
    return stage_timeout, Scenario(**scenario)


# Each stage advances exactly one tick after it has waited its whole timeout (T ticks).
BOUNDARIES = {
    "scale-up": _boundary(
        "scale_up",
        events=[(T + 1, SCALE_UP)],
        nodes=[(T + 2, node())],
        scheduled_at=T + 3,
        succeeded_at=T + 4,
    ),
    "node-join": _boundary(
        "node_join",
        events=[(1, SCALE_UP)],
        nodes=[(1 + T + 1, node())],
        scheduled_at=T + 3,
        succeeded_at=T + 4,
    ),
    "node-ready": _boundary(
        "node_ready",
        events=[(1, SCALE_UP)],
        nodes=[(2, node(ready=False, gpus=0)), (2 + T + 1, node())],
        scheduled_at=2 + T + 2,
        succeeded_at=2 + T + 3,
    ),
    "gpu": _boundary(
        "gpu",
        events=[(1, SCALE_UP)],
        nodes=[(2, node(gpus=0)), (2 + T + 1, node())],
        scheduled_at=2 + T + 2,
        succeeded_at=2 + T + 3,
    ),
    "run-unscheduled": _boundary(
        "run",
        events=[(1, SCALE_UP)],
        nodes=[(2, node())],
        scheduled_at=2 + T + 1,
        succeeded_at=2 + T + 2,
    ),
    "run-unfinished": _boundary(
        "run",
        events=[(1, SCALE_UP)],
        nodes=[(2, node())],
        scheduled_at=3,
        succeeded_at=3 + T + 1,
    ),
}


class _PollCount:
    """Time as the number of times the pod was read (the fake server's tick); no waits."""

    def __init__(self, fake):
        self.fake = fake

    def now(self):
        return float(self.fake.tick)

    def sleep(self, seconds):
        pass


@pytest.mark.parametrize(("stage", "scenario"), BOUNDARIES.values(), ids=BOUNDARIES.keys())
def test_a_stage_that_takes_exactly_its_timeout_has_not_stalled(tmp_path, stage, scenario):
    """A stall is a stage taking longer than its timeout: with a clock that is the number of
    polls, each stage here finishes on the first poll after waiting exactly T."""
    import io

    from kubernetes import client, config

    from gpu_pool.cli.commands.verify.state import Timeouts
    from gpu_pool.cli.commands.verify.verifier import Verifier
    from gpu_pool.plan.pool import plan_pool
    from gpu_pool.plan.record import pool_record
    from gpu_pool.settings import PoolSettings
    from tests.support.fake_kube import FakeKubernetes

    with FakeKubernetes(scenario) as fake:
        config.load_kube_config(config_file=str(fake.kubeconfig(tmp_path)))
        api = client.ApiClient(client.Configuration.get_default_copy())
        timeouts = {name: 100.0 for name in ("scale_up", "node_join", "node_ready", "gpu", "run")}
        out = io.StringIO()
        verifier = Verifier(
            client.CoreV1Api(api),
            client.AppsV1Api(api),
            pool_record(plan_pool(PoolSettings()), "gpu-pool", None),
            "gpu-pool",
            "default",
            Timeouts(**{**timeouts, stage: float(T)}, poll=0),
            out=out,
            clock=_PollCount(fake),
        )
        assert verifier.run() == 0, out.getvalue()
