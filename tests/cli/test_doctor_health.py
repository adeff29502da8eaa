"""`gpu-pool doctor` on GPU health: each GPU node's AcceleratedHardwareReady condition as the
EKS node monitoring agent sets it (reasons from the agent's published list), read by the
official Kubernetes client from the fake API server, and what the pool's repair does about it:
off, an action after the condition's wait, overdue, or nothing for the reason."""

from __future__ import annotations

import pytest

from tests.support.command import run
from tests.support.fake_kube import Scenario, karpenter_object, node
from tests.support.karpenter_scenarios import karpenter_run, scenario
from tests.support.node_health import GPU_READY, agent_condition, agent_reason

NODE = "ip-10-0-1-5.ec2.internal"
GPU = "AcceleratedHardwareReady"
READY = {"type": "Ready", "status": "True", "message": "kubelet is posting ready status"}
XID79 = agent_reason(GPU, "NvidiaXIDError", 79)
XID79_MESSAGE = "detected XID-79 on the instance, review kernel logs for additional information."
XID64 = agent_reason(GPU, "NvidiaXIDError", 64)


def gpu_node(*conditions) -> dict:
    return node(conditions=[READY, *conditions])


def xid79(minutes):
    return agent_condition(GPU, "False", XID79, XID79_MESSAGE, minutes)


# The pool's settings file by case: None, the default node group pool (repair on).
POOL_FILES = {
    "auto": "pool:\n  provisioner: auto-mode\n",
    "repair-off": "pool:\n  repair: {enabled: false}\n",
}


def pool_file(tmp_path, pool) -> list[str]:
    if pool is None:
        return []
    config = tmp_path / "pool.yaml"
    config.write_text(POOL_FILES[pool])
    return ["--config", str(config)]


AUTO_MODE = {
    "autoscaler": None,
    "karpenter": None,
    "daemon_sets": [],
    "karpenter_objects": [
        karpenter_object("NodePool", "gpu-pool-gpu"),
        karpenter_object("NodeClass", "gpu-pool-gpu"),
    ],
}
CORDON = f"kubectl cordon {NODE}"
OVERDUE_FIX = (
    "repair pauses while too many nodes are unhealthy (EKS Auto Mode's own limit) (kubectl get "
    f"nodes); otherwise {CORDON}, drain it and replace its instance"
)

CASES = {
    # (the pool's settings file of POOL_FILES, the node's agent conditions, the verdict, its fix)
    "healthy-repair-off": (
        "repair-off",
        [agent_condition(GPU, "True", *GPU_READY)],
        f"[  ok] health {NODE}: AcceleratedHardwareReady=True (NvidiaGPUIsReady); repair off",
        None,
    ),
    "healthy-repair-on": (
        None,
        [agent_condition(GPU, "True", *GPU_READY)],
        f"[  ok] health {NODE}: AcceleratedHardwareReady=True (NvidiaGPUIsReady); repair on",
        None,
    ),
    # A node group pool's NodeRepairConfig reboots for XID 64 (plan/repair.py's overrides).
    "node-group-reboots-xid64": (
        None,
        [agent_condition(GPU, "False", XID64, minutes=2)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 2 min: NvidiaXID64Error; "
        "repair will reboot it after 10 min",
        f"{CORDON} keeps new pods off it until then",
    ),
    "no-agent": (
        None,
        [],
        f"[warn] health {NODE}: no AcceleratedHardwareReady condition: the EKS node monitoring "
        "agent does not watch its GPUs",
        "install the EKS add-on eks-node-monitoring-agent (aws eks create-addon --cluster-name "
        "gpu-pool --addon-name eks-node-monitoring-agent), or see why its pod does not run on "
        "the node (kubectl get pods -A -o wide | grep eks-node-monitoring-agent)",
    ),
    "fault-repair-off": (
        "repair-off",
        [xid79(42)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 42 min: NvidiaXID79Error "
        f"({XID79_MESSAGE}); repair is off for pool gpu",
        f"{CORDON}, drain it and replace its instance; with repair on for the pool EKS does "
        "that itself",
    ),
    "auto-mode-healthy": (
        "auto",
        [agent_condition(GPU, "True", *GPU_READY)],
        f"[  ok] health {NODE}: AcceleratedHardwareReady=True (NvidiaGPUIsReady); repair on",
        None,
    ),
    "auto-mode-no-agent": (
        "auto",
        [],
        f"[warn] health {NODE}: no AcceleratedHardwareReady condition: the EKS node monitoring "
        "agent does not watch its GPUs",
        f"Auto Mode's nodes run the agent themselves: kubectl describe node {NODE}",
    ),
    "auto-mode-fault-within-wait": (
        "auto",
        [xid79(4)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 4 min: NvidiaXID79Error "
        f"({XID79_MESSAGE}); repair will replace it after 10 min",
        f"{CORDON} keeps new pods off it until then",
    ),
    "auto-mode-fault-past-wait": (
        "auto",
        [xid79(42)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 42 min: NvidiaXID79Error "
        f"({XID79_MESSAGE}); repair (replace after 10 min) is 32 min overdue",
        OVERDUE_FIX,
    ),
    # A node group pauses as EKS does (review of #36: the hint said "more than 20%").
    "node-group-fault-past-wait": (
        None,
        [xid79(42)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 42 min: NvidiaXID79Error "
        f"({XID79_MESSAGE}); repair (replace after 10 min) is 32 min overdue",
        "repair pauses while more than 5 nodes and more than 20% of the node group are "
        f"unhealthy (kubectl get nodes); otherwise {CORDON}, drain it and replace its instance",
    ),
    # EKS reboots for XID 64, but only managed node groups reboot: Auto Mode replaces.
    "auto-mode-replaces-where-eks-reboots": (
        "auto",
        [agent_condition(GPU, "False", XID64, minutes=2)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 2 min: NvidiaXID64Error; "
        "repair will replace it after 10 min",
        f"{CORDON} keeps new pods off it until then",
    ),
    "auto-mode-no-repair-for-dcgm": (
        "auto",
        [agent_condition(GPU, "False", agent_reason(GPU, "DCGMDiagnosticFailure"), minutes=15)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 15 min: "
        "DCGMDiagnosticFailure; repair takes no action on DCGMDiagnosticFailure",
        f"if the fault stays (for a DCGM reason: dcgmi diag -r 2 on the node), {CORDON}, "
        "drain it and replace its instance",
    ),
    # Other agent conditions wait 30 minutes.
    "auto-mode-kernel-past-wait": (
        "auto",
        [
            agent_condition(GPU, "True", *GPU_READY),
            agent_condition(
                "KernelReady", "False", agent_reason("KernelReady", "ForkFailedOutOfPIDs"), "", 41
            ),
        ],
        f"[fail] health {NODE}: KernelReady=False for 41 min: ForkFailedOutOfPIDs; repair "
        "(replace after 30 min) is 11 min overdue",
        OVERDUE_FIX,
    ),
    # Both are optional in the API: no time, no overdue; no reason, EKS's action for the
    # condition.
    "auto-mode-fault-without-time-or-reason": (
        "auto",
        [{"type": GPU, "status": "False"}],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False: no reason given; repair will "
        "replace it after 10 min",
        f"{CORDON} keeps new pods off it until then",
    ),
    # At its wait, not past it: not overdue yet.
    "auto-mode-fault-at-its-wait": (
        "auto",
        [xid79(10)],
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for 10 min: NvidiaXID79Error "
        f"({XID79_MESSAGE}); repair will replace it after 10 min",
        f"{CORDON} keeps new pods off it until then",
    ),
    "gpu-state-unknown": (
        None,
        [agent_condition(GPU, "Unknown", "NodeStatusUnknown", minutes=3)],
        f"[warn] health {NODE}: AcceleratedHardwareReady=Unknown for 3 min: NodeStatusUnknown; "
        "the agent's state is not known",
        f"kubectl describe node {NODE}: whether the node and its eks-node-monitoring-agent pod run",
    ),
}


@pytest.mark.parametrize(("pool", "conditions", "line", "fix"), CASES.values(), ids=CASES.keys())
def test_each_health_verdict_and_its_fix(tmp_path, capsys, pool, conditions, line, fix):
    scenario = Scenario(nodes=[(0, gpu_node(*conditions))], **(AUTO_MODE if pool == "auto" else {}))
    code, _ = run(tmp_path, scenario, *pool_file(tmp_path, pool), command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert line in out, "\n".join(out)
    following = out[out.index(line) + 1] if out.index(line) + 1 < len(out) else ""
    if fix:
        assert following == f"       fix: {fix}"
    else:
        assert not following.startswith("       fix: ")
    assert code == (1 if line.startswith("[fail]") else 0)


def test_health_comes_after_the_other_checks_and_a_healthy_gpu_gives_no_other_line(
    tmp_path, capsys
):
    """A Ready GPU node of a healthy pool: the node's own line, then (last) its health."""
    scenario = Scenario(nodes=[(0, gpu_node(agent_condition(GPU, "True", *GPU_READY)))])
    code, _ = run(tmp_path, scenario, command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line for line in out if NODE in line] == [
        f"[  ok] node {NODE}: Ready, nvidia.com/gpu: 1",
        f"[  ok] health {NODE}: AcceleratedHardwareReady=True (NvidiaGPUIsReady); repair on",
    ]
    assert out[-1].startswith(f"[  ok] health {NODE}")


def test_a_healthy_agent_condition_is_not_a_problem_of_a_node_that_is_not_ready(tmp_path, capsys):
    """The agent's conditions are True when healthy, unlike MemoryPressure or DiskPressure: a
    node that is not Ready names only what is wrong."""
    not_ready = {"type": "Ready", "status": "False", "message": "container runtime down"}
    healthy = agent_condition(GPU, "True", *GPU_READY)
    scenario = Scenario(nodes=[(0, node(conditions=[not_ready, healthy]))])
    run(tmp_path, scenario, command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert f"[fail] node {NODE}: not Ready: Ready=False: container runtime down" in out


@pytest.mark.parametrize(
    ("xid", "minutes", "repair"),
    [
        (48, 2, "repair will reboot it after 10 min"),
        (64, 2, "repair will replace it after 10 min"),
        (46, 12, "repair (reboot after 10 min) is 2 min overdue"),
    ],
)
def test_doctor_says_what_karpenter_does_per_reason(tmp_path, capsys, xid, minutes, repair):
    """#48 item 2: Karpenter 1.15 with rebootForRepair (on while a Karpenter pool repairs)
    reboots a node for the XIDs its own table lists; doctor said "replace" for every one."""
    reason = agent_reason(GPU, "NvidiaXIDError", xid)
    conditions = [agent_condition(GPU, "False", reason, minutes=minutes)]
    karpenter_run(tmp_path, scenario(nodes=[(0, gpu_node(*conditions))]), command="doctor")
    out = capsys.readouterr().out.splitlines()
    line = (
        f"[fail] health {NODE}: AcceleratedHardwareReady=False for {minutes} min: "
        f"NvidiaXID{xid}Error; {repair}"
    )
    assert line in out, "\n".join(out)
