"""`gpu-pool verify` and `doctor` on an EKS Auto Mode pool: the scale-up signal is a NodeClaim,
as with Karpenter, but EKS runs the controller and the device plugin, so neither is looked for
in the cluster. The local fake API server plays the cluster."""

from __future__ import annotations

import pytest

from tests.support.command import run
from tests.support.fake_kube import (
    Scenario,
    condition,
    karpenter_object,
    node,
    node_claim,
)
from tests.support.karpenter_scenarios import LAUNCHED, NOT_LAUNCHED, NOT_LAUNCHED_FIX

READY_OBJECTS = [
    karpenter_object("NodePool", "gpu-pool-gpu"),
    karpenter_object("NodeClass", "gpu-pool-gpu"),
]


def scenario(**kw) -> Scenario:
    """An Auto Mode cluster: no Karpenter Deployment, no autoscaler, no device plugin
    DaemonSet; the pool's NodePool and NodeClass are Ready."""
    return Scenario(
        **{
            "autoscaler": None,
            "karpenter": None,
            "daemon_sets": [],
            "karpenter_objects": READY_OBJECTS,
            **kw,
        }
    )


def auto_mode_run(tmp_path, state, command="verify"):
    config = tmp_path / "auto.yaml"
    config.write_text("pool:\n  provisioner: auto-mode\n")
    return run(tmp_path, state, "--config", str(config), command=command)


def test_verify_follows_an_auto_mode_node_claim_to_a_gpu_pod_that_succeeds(tmp_path, capsys):
    code, _ = auto_mode_run(
        tmp_path,
        scenario(
            node_claims=[(2, node_claim("gpu-pool-gpu-a1b2c", "gpu"))],
            nodes=[(4, node())],
            scheduled_at=6,
            succeeded_at=8,
        ),
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "scale-up: Karpenter NodeClaim gpu-pool-gpu-a1b2c (g5.xlarge)" in out
    assert "verify: OK" in out


CASES = {
    "no-node-claim": (
        scenario(
            karpenter_objects=[
                READY_OBJECTS[0],
                karpenter_object(
                    "NodeClass",
                    "gpu-pool-gpu",
                    condition("Ready", "False", "InstanceProfileNotReady", "role not found"),
                ),
            ]
        ),
        "no NodeClaim: Auto Mode launched nothing for the pod",
        [
            "NodePool gpu-pool-gpu: Ready",
            "NodeClass gpu-pool-gpu: Ready: InstanceProfileNotReady: role not found",
        ],
        "read the pod's events (Auto Mode says which requirement failed); check that the "
        "cluster has Auto Mode compute on: aws eks describe-cluster --name gpu-pool --query "
        "cluster.computeConfig",
    ),
    "node-claim-not-launched": (
        scenario(node_claims=[(2, node_claim("gpu-pool-gpu-x7k2p", "gpu", NOT_LAUNCHED))]),
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
                        condition("Registered", "Unknown", "AwaitingRegistration"),
                    ),
                )
            ]
        ),
        "the NodeClaim launched but its node never joined the cluster",
        ["NodeClaim gpu-pool-gpu-x7k2p: Registered: AwaitingRegistration"],
        "the node role's EC2 access entry with AmazonEKSAutoNodePolicy and the subnets' route "
        "to the API server: `kubectl describe nodeclaim gpu-pool-gpu-x7k2p`",
    ),
    "node-without-gpus": (
        scenario(
            node_claims=[(2, node_claim("gpu-pool-gpu-x7k2p", "gpu", LAUNCHED))],
            nodes=[(3, node(gpus=0))],
        ),
        "the node is Ready but advertises no nvidia.com/gpu (Auto Mode's device plugin)",
        ["ip-10-0-1-5.ec2.internal: 0 nvidia.com/gpu allocatable"],
        "Auto Mode runs the plugin itself (not as a DaemonSet): `kubectl describe node`, and "
        "an AWS support case if it stays so",
    ),
}


@pytest.mark.parametrize(("state", "cause", "evidence", "fix"), CASES.values(), ids=CASES.keys())
def test_verify_classifies_each_auto_mode_stall(tmp_path, capsys, state, cause, evidence, fix):
    code, fake = auto_mode_run(tmp_path, state)
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    failed = [line for line in out if line.startswith("verify: FAILED")]
    assert len(failed) == 1 and failed[0].endswith(f": {cause}"), out
    assert [line.removeprefix("  evidence: ") for line in out if line.startswith("  evidence")][
        : len(evidence)
    ] == evidence
    (fix_line,) = [line for line in out if line.startswith("  fix: ")]
    assert fix_line.removeprefix("  fix: ") == fix
    assert fake.deleted


def test_doctor_looks_for_no_controller_or_device_plugin_daemonset(tmp_path, capsys):
    """Auto Mode's Karpenter and device plugin are EKS's: their absence in the cluster is
    normal; a Ready node without GPUs is still a failure, named for Auto Mode's plugin."""
    code, _ = auto_mode_run(tmp_path, scenario(nodes=[(0, node(gpus=0))]), command="doctor")
    out = capsys.readouterr().out
    assert code == 1
    assert "DaemonSet" not in out.replace("(not a DaemonSet)", "")
    assert "karpenter" not in out.lower().replace("karpenter.sh", "")
    assert out.splitlines()[:4] == [
        "[fail] node ip-10-0-1-5.ec2.internal: Ready, but 0 nvidia.com/gpu; Auto Mode's own "
        "device plugin (not a DaemonSet) has not registered its GPUs",
        "       fix: kubectl describe node ip-10-0-1-5.ec2.internal (conditions and events), "
        "and an AWS support case if it stays so: EKS manages that plugin",
        "[  ok] NodePool gpu-pool-gpu: Ready",
        "[  ok] NodeClass gpu-pool-gpu: Ready",
    ]


def test_doctor_passes_a_healthy_auto_mode_pool(tmp_path, capsys):
    code, _ = auto_mode_run(tmp_path, scenario(nodes=[(0, node(gpus=1))]), command="doctor")
    out = capsys.readouterr().out
    assert code == 0, out
