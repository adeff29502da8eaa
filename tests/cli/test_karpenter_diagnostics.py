"""`gpu-pool verify` and `doctor` on a Karpenter pool: the scale-up signal is a NodeClaim, and
each way it can stall is classified with its evidence. The local fake API server plays the
cluster, botocore's Stubber the AWS APIs."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from tests.support.aws_stubs import stubbed
from tests.support.command import run
from tests.support.fake_kube import (
    autoscaler,
    condition,
    daemon_set,
    karpenter_controller,
    karpenter_object,
    node,
    node_claim,
)
from tests.support.karpenter_scenarios import (
    LAUNCHED,
    NOT_JOINED_FIX,
    NOT_LAUNCHED,
    NOT_LAUNCHED_FIX,
    QUEUE,
    QUEUE_ARN,
    QUEUE_URL,
    READY_OBJECTS,
    UNREGISTERED_CLAIM,
    karpenter_run,
    scenario,
)

# -- verify --------------------------------------------------------------------------------------


def test_verify_follows_a_node_claim_to_a_gpu_pod_that_succeeds(tmp_path, capsys):
    before = node_claim("gpu-pool-gpu-older", "gpu", LAUNCHED)
    code, fake = karpenter_run(
        tmp_path,
        scenario(
            node_claims=[(0, before), (2, node_claim("gpu-pool-gpu-x7k2p", "gpu"))],
            nodes=[(4, node())],
            scheduled_at=6,
            succeeded_at=8,
        ),
    )
    out = capsys.readouterr().out
    assert code == 0, out
    scale_up = [line for line in out.splitlines() if "] scale-up" in line]
    assert [line.split("] ", 1)[1] for line in scale_up] == [
        "scale-up: Karpenter NodeClaim gpu-pool-gpu-x7k2p (g5.xlarge)"
    ]
    assert "verify: OK" in out


CASES = {
    "controller-down": (
        scenario(karpenter=None),
        "no NodeClaim: the Karpenter controller is not running",
        ["no Deployment karpenter in kube-system"],
        "deploy the stack: a pool with provisioner: karpenter installs it",
    ),
    "controller-not-ready": (
        scenario(karpenter=karpenter_controller(ready=0)),
        "no NodeClaim: the Karpenter controller is not running",
        ["karpenter has no ready replica"],
        "kubectl -n kube-system logs deploy/karpenter",
    ),
    "requirements": (
        scenario(
            karpenter_objects=[
                karpenter_object(
                    "NodePool",
                    "gpu-pool-gpu",
                    condition("Ready", "False", "NotReady"),
                    condition(
                        "ValidationSucceeded",
                        "False",
                        "NodePoolValidationFailed",
                        'label domain "karpenter.sh" is restricted',
                    ),
                ),
                READY_OBJECTS[1],
            ],
            events=[
                (
                    1,
                    (
                        "FailedScheduling",
                        'Failed to schedule pod, incompatible with nodepool "gpu-pool-gpu"',
                    ),
                )
            ],
        ),
        "no NodeClaim although Karpenter runs: the NodePool's requirements, limits or "
        "EC2NodeClass let no instance type serve the pod",
        [
            "NodePool gpu-pool-gpu: Ready: NotReady; ValidationSucceeded: "
            'NodePoolValidationFailed: label domain "karpenter.sh" is restricted',
            "EC2NodeClass gpu-pool-gpu: Ready",
            'event FailedScheduling: Failed to schedule pod, incompatible with nodepool "gpu-pool-gpu"',
        ],
        "read the pod's events (Karpenter says which requirement failed) and its log: "
        "kubectl -n kube-system logs deploy/karpenter | grep ",
    ),
    "capacity": (
        scenario(
            node_claims=[
                (2, node_claim()),
                (3, node_claim("gpu-pool-gpu-x7k2p", "gpu", NOT_LAUNCHED)),
            ]
        ),
        "the NodeClaim was not launched (capacity or IAM)",
        [
            "NodeClaim gpu-pool-gpu-x7k2p: Launched=InsufficientCapacityError: all requested "
            "instance types were unavailable during launch"
        ],
        NOT_LAUNCHED_FIX,
    ),
    "launched-never-joined": (
        scenario(
            node_claims=[
                (
                    2,
                    node_claim(
                        "gpu-pool-gpu-x7k2p",
                        "gpu",
                        LAUNCHED,
                        condition(
                            "Registered",
                            "Unknown",
                            "AwaitingRegistration",
                            "Node not registered with cluster",
                        ),
                    ),
                )
            ]
        ),
        "the NodeClaim launched but its node never joined the cluster",
        [
            "NodeClaim gpu-pool-gpu-x7k2p: Registered: AwaitingRegistration: Node not "
            "registered with cluster"
        ],
        NOT_JOINED_FIX,
    ),
    "not-initialized-device-plugin": (
        scenario(
            node_claims=[(2, node_claim("gpu-pool-gpu-x7k2p", "gpu", LAUNCHED))],
            nodes=[(3, node(gpus=0))],
            daemon_sets=[daemon_set(tolerations=[])],
        ),
        "the node is Ready but advertises no nvidia.com/gpu (device plugin)",
        [
            "no device plugin DaemonSet would run on ip-10-0-1-5.ec2.internal: "
            "nvidia-device-plugin-gpu: does not tolerate nvidia.com/gpu=true:NoSchedule"
        ],
        "its nodeSelector must match the node's gpu-pool.io/pool label and its tolerations the "
        "pool's taints (redeploy the stack; `gpu-pool doctor` shows the DaemonSet)",
    ),
}


@pytest.mark.parametrize(("state", "cause", "evidence", "fix"), CASES.values(), ids=CASES.keys())
def test_verify_classifies_each_karpenter_stall(tmp_path, capsys, state, cause, evidence, fix):
    code, fake = karpenter_run(tmp_path, state)
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    failed = [line for line in out if line.startswith("verify: FAILED")]
    assert len(failed) == 1 and failed[0].endswith(f": {cause}")
    assert [line.removeprefix("  evidence: ") for line in out if line.startswith("  evidence")][
        : len(evidence)
    ] == evidence
    (fix_line,) = [line for line in out if line.startswith("  fix: ")]
    assert fix_line.removeprefix("  fix: ").startswith(fix)
    assert fake.deleted  # the pod is cleaned up however it ends


def test_a_claim_that_existed_before_the_pod_is_not_its_scale_up(tmp_path, capsys):
    """A NodeClaim of the pool from before submission (another pod's) must not count."""
    older = node_claim("gpu-pool-gpu-older", "gpu", NOT_LAUNCHED)
    code, _ = karpenter_run(tmp_path, scenario(node_claims=[(0, older)]))
    out = capsys.readouterr().out
    assert code == 1
    assert "scale-up" not in "".join(line for line in out.splitlines() if line.startswith("["))
    assert "FAILED while waiting for 'scale-up': no NodeClaim although Karpenter runs" in out


# -- doctor --------------------------------------------------------------------------------------


def _queue_aws(rules: int | None):
    """SQS and EventBridge showing the queue with `rules` rules sending to it; None: no such
    queue."""
    sqs = boto3.client(
        "sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(sqs)
    if rules is None:
        stubber.add_client_error(
            "get_queue_url",
            service_error_code="AWS.SimpleQueueService.NonExistentQueue",
            expected_params={"QueueName": QUEUE},
        )
    else:
        stubber.add_response("get_queue_url", {"QueueUrl": QUEUE_URL}, {"QueueName": QUEUE})
        stubber.add_response(
            "get_queue_attributes",
            {"Attributes": {"QueueArn": QUEUE_ARN}},
            {"QueueUrl": QUEUE_URL, "AttributeNames": ["QueueArn"]},
        )
    stubber.activate()
    events = stubbed(
        "events",
        []
        if rules is None
        else [
            (
                "list_rule_names_by_target",
                {"RuleNames": [f"rule-{i}" for i in range(rules)]},
                {"TargetArn": QUEUE_ARN},
            )
        ],
    )
    return {"sqs": sqs, "events": events}.__getitem__


def _queue_by_reference():
    """A controller whose INTERRUPTION_QUEUE comes from a reference, not a value: the chart
    never renders that, so it is no queue gpu-pool configured."""
    controller = karpenter_controller(queue="")
    env = controller["spec"]["template"]["spec"]["containers"][0]["env"]
    env.append(
        {
            "name": "INTERRUPTION_QUEUE",
            "valueFrom": {"configMapKeyRef": {"name": "karpenter", "key": "queue"}},
        }
    )
    return controller


STUCK_CLAIM = node_claim("gpu-pool-gpu-x7k2p", "gpu", NOT_LAUNCHED)
DOCTOR_CASES = {
    # (scenario, queue rules or None for no queue ("no-aws": no credentials), line, exit code, fix)
    "all-ready": (
        scenario(),
        5,
        "[  ok] karpenter: 1 ready, interruption queue 'gpu-pool-interruption'",
        0,
        None,
    ),
    "node-pool-ready": (scenario(), 5, "[  ok] NodePool gpu-pool-gpu: Ready", 0, None),
    "node-class-ready": (scenario(), 5, "[  ok] EC2NodeClass gpu-pool-gpu: Ready", 0, None),
    "queue-wired": (
        scenario(),
        5,
        "[  ok] interruption queue gpu-pool-interruption: 5 EventBridge rules send to it",
        0,
        None,
    ),
    "controller-missing": (
        scenario(karpenter=None),
        5,
        "[fail] karpenter: no Deployment karpenter in kube-system",
        1,
        "deploy the stack: a pool with provisioner: karpenter installs it",
    ),
    "controller-not-ready": (
        scenario(karpenter=karpenter_controller(ready=0)),
        5,
        "[fail] karpenter: karpenter has no ready replica",
        1,
        "kubectl -n kube-system logs deploy/karpenter",
    ),
    "node-pool-not-ready": (
        scenario(
            karpenter_objects=[
                karpenter_object(
                    "NodePool",
                    "gpu-pool-gpu",
                    condition("Ready", "False", "NodeClassNotReady", "EC2NodeClass not ready"),
                ),
                READY_OBJECTS[1],
            ]
        ),
        5,
        "[fail] NodePool gpu-pool-gpu: Ready: NodeClassNotReady: EC2NodeClass not ready",
        1,
        "kubectl describe nodepool gpu-pool-gpu (and the controller's log)",
    ),
    "node-class-not-ready": (
        scenario(
            karpenter_objects=[
                READY_OBJECTS[0],
                karpenter_object(
                    "EC2NodeClass",
                    "gpu-pool-gpu",
                    condition("Ready", "False", "NotReady"),
                    condition(
                        "SubnetsReady",
                        "False",
                        "SubnetsNotFound",
                        "SubnetSelector did not match any Subnets",
                    ),
                ),
            ]
        ),
        5,
        "[fail] EC2NodeClass gpu-pool-gpu: Ready: NotReady; SubnetsReady: SubnetsNotFound: "
        "SubnetSelector did not match any Subnets",
        1,
        "kubectl describe ec2nodeclass gpu-pool-gpu (and the controller's log)",
    ),
    "node-class-without-status": (
        scenario(karpenter_objects=[READY_OBJECTS[0], {**READY_OBJECTS[1], "status": {}}]),
        5,
        "[fail] EC2NodeClass gpu-pool-gpu: no status yet: is the controller running?",
        1,
        "kubectl describe ec2nodeclass gpu-pool-gpu (and the controller's log)",
    ),
    "node-pool-missing": (
        scenario(karpenter_objects=[READY_OBJECTS[1]]),
        5,
        "[fail] NodePool gpu-pool-gpu: not found",
        1,
        "deploy the stack (it applies the manifest)",
    ),
    "claim-not-launched": (
        scenario(node_claims=[(0, STUCK_CLAIM)]),
        5,
        "[fail] NodeClaim gpu-pool-gpu-x7k2p: Launched: InsufficientCapacityError: all "
        "requested instance types were unavailable during launch",
        1,
        "kubectl describe nodeclaim gpu-pool-gpu-x7k2p",
    ),
    "claim-registered-unknown-and-not-ready": (
        scenario(
            node_claims=[
                (
                    0,
                    UNREGISTERED_CLAIM,
                )
            ]
        ),
        5,
        "[fail] NodeClaim gpu-pool-gpu-x7k2p: Registered: AwaitingRegistration; Ready: "
        "NotRegistered: not registered",
        1,
        "kubectl describe nodeclaim gpu-pool-gpu-x7k2p",
    ),
    "claim-up": (
        scenario(node_claims=[(0, node_claim("gpu-pool-gpu-x7k2p", "gpu", LAUNCHED))]),
        5,
        "[  ok] interruption queue gpu-pool-interruption: 5 EventBridge rules send to it",
        0,
        None,
    ),
    "queue-from-a-reference": (
        scenario(karpenter=_queue_by_reference()),
        5,
        "[fail] interruption queue (none): the controller reads no queue "
        "(settings.interruptionQueue is empty)",
        1,
        "deploy the stack: it sets the chart's settings.interruptionQueue",
    ),
    "queue-missing": (
        scenario(),
        None,
        "[fail] interruption queue gpu-pool-interruption: does not exist",
        1,
        "deploy the stack (it creates the queue)",
    ),
    "queue-without-rules": (
        scenario(),
        3,
        "[fail] interruption queue gpu-pool-interruption: 3 EventBridge rule(s) send to it, 5 "
        "expected",
        1,
        "deploy the stack (it creates the five rules); until then Spot and health "
        "interruptions reach no one",
    ),
    "queue-not-configured": (
        scenario(karpenter=karpenter_controller(queue="")),
        5,
        "[fail] interruption queue (none): the controller reads no queue "
        "(settings.interruptionQueue is empty)",
        1,
        "deploy the stack: it sets the chart's settings.interruptionQueue",
    ),
    "no-aws": (
        scenario(),
        "no-aws",
        "[warn] interruption queue: not checked: no AWS credentials or region",
        0,
        None,
    ),
}


@pytest.mark.parametrize(
    ("state", "rules", "line", "code", "fix"), DOCTOR_CASES.values(), ids=DOCTOR_CASES.keys()
)
def test_each_doctor_verdict_on_a_karpenter_pool(tmp_path, capsys, state, rules, line, code, fix):
    aws = None if rules == "no-aws" else _queue_aws(rules)
    if (
        rules == 5
        and state.karpenter is not None
        and not state.karpenter["spec"]["template"]["spec"]["containers"][0]["env"][1:]
    ):
        aws = None
    exit_code, _ = karpenter_run(tmp_path, state, aws=aws, command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert line in out, "\n".join(out)
    assert exit_code == code
    following = out[out.index(line) + 1] if out.index(line) + 1 < len(out) else ""
    if fix is None:
        assert not following.startswith("       fix: ")
    else:
        assert following == f"       fix: {fix}"


def test_doctor_on_a_karpenter_only_app_does_not_ask_for_cluster_autoscaler(tmp_path, capsys):
    exit_code, _ = karpenter_run(tmp_path, scenario(), aws=_queue_aws(5), command="doctor")
    out = capsys.readouterr().out
    assert "autoscaler" not in out and "ASG" not in out
    assert exit_code == 0


def test_doctor_on_a_mixed_app_checks_both_provisioners(tmp_path, capsys):
    config = tmp_path / "mixed.yaml"
    config.write_text(
        "pools:\n  inference: {}\n  batch:\n    provisioner: karpenter\n"
        "    labels: {workload: batch}\n"
    )
    state = scenario(
        autoscaler=autoscaler(),
        karpenter_objects=[
            karpenter_object("NodePool", "gpu-pool-batch"),
            karpenter_object("EC2NodeClass", "gpu-pool-batch"),
        ],
    )
    exit_code, _ = run(tmp_path, state, "--config", str(config), command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert [
        line.split(":")[0] for line in out if not line.startswith(("[  ok] pool", "[  ok] Dae"))
    ] == [
        "[  ok] autoscaler",
        "[warn] ASG tags",
        "[  ok] karpenter",
        "[  ok] NodePool gpu-pool-batch",
        "[  ok] EC2NodeClass gpu-pool-batch",
        "[warn] interruption queue",
    ]
    assert exit_code == 0


def test_doctor_reads_every_karpenter_pools_node_pool_and_class(tmp_path, capsys):
    config = tmp_path / "two.yaml"
    config.write_text(
        "pools:\n  a:\n    provisioner: karpenter\n    labels: {workload: a}\n"
        "  b:\n    provisioner: karpenter\n    labels: {workload: b}\n"
    )
    state = scenario(
        karpenter_objects=[
            karpenter_object(kind, f"gpu-pool-{pool}")
            for pool in ("a", "b")
            for kind in ("NodePool", "EC2NodeClass")
        ],
    )
    run(tmp_path, state, "--config", str(config), command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out if " gpu-pool-" in line] == [
        "[  ok] NodePool gpu-pool-a",
        "[  ok] EC2NodeClass gpu-pool-a",
        "[  ok] NodePool gpu-pool-b",
        "[  ok] EC2NodeClass gpu-pool-b",
    ]
