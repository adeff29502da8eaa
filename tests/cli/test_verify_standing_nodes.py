"""`gpu-pool verify` and `doctor` on a pool whose nodes stand there without the GPUs the smoke
pod asks for, for each kind of pool: the GPU Operator's (its steps: Node Feature Discovery, the
operator's labels, a MIG layout, its device plugin's pod), a faulty GPU, a time-sliced pool whose
plugin runs without its config, a Karpenter pool, and a node that is not Ready. Each must name
what holds the GPUs back, not blame the autoscaler (which counts a GPU-labelled node without
GPUs as capacity on the way, and scales nothing up)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.command import run
from tests.support.fake_kube import Scenario, daemon_set, node
from tests.support.karpenter_scenarios import karpenter_run
from tests.support.karpenter_scenarios import scenario as karpenter_scenario
from tests.support.node_health import agent_condition, agent_reason

NODE = "ip-10-0-9-9.ec2.internal"
OPERATOR = "pool:\n  gpu_software: gpu-operator\n"
MIG = (
    "pool:\n  instance_types: [p5.48xlarge]\n  gpu_software: gpu-operator\n"
    "  sharing: {mode: mig, strategy: mixed, layout: {1g.10gb+me: 1, 3g.40gb: 1}}\n"
)
TIME_SLICED = "pool:\n  sharing: {mode: time-slicing, replicas: 8, rename: true}\n"
NFD = {"feature.node.kubernetes.io/pci-10de.present": "true"}
LABELLED = {**NFD, "nvidia.com/gpu.deploy.device-plugin": "true"}
# verify's timeouts: the pod pends past --scale-up-timeout; the nodes have been Ready for 30
# minutes, far longer than --gpu-timeout.
SHORT = ["--scale-up-timeout", "3", "--gpu-timeout", "60"]


def _config(tmp_path, text):
    path = tmp_path / "pool.yaml"
    path.write_text(text)
    return ["--config", str(path)]


def _standing(labels=None, gpus=0, conditions=(), **allocatable) -> dict:
    """A pool node Ready for 30 minutes with `labels` added, advertising `gpus` and
    `allocatable` (resource names with dots spelt as underscores are not needed here)."""
    since = (datetime.now(UTC) - timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {
        "type": "Ready",
        "status": "True",
        "message": "kubelet is posting ready status",
        "lastTransitionTime": since,
    }
    standing = node(name=NODE, gpus=gpus, conditions=[ready, *conditions])
    standing["metadata"]["labels"].update(labels or {})
    standing["status"]["allocatable"].update(allocatable)
    return standing


def _operator_plugin(ready: bool, waiting: str | None = None, node_name: str = NODE) -> dict:
    """The GPU Operator's device plugin pod on the node (NVIDIA/gpu-operator v26.3.1
    assets/state-device-plugin/0500_daemonset.yaml: label app=nvidia-device-plugin-daemonset,
    init container toolkit-validation first)."""
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"
    init = [
        {
            "name": name,
            "image": image,
            "imageID": "",
            "ready": done,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 0}} if done else {"running": {}},
        }
        for name, done in _init_states(waiting)
    ]
    return {
        "metadata": {
            "name": "nvidia-device-plugin-daemonset-x7k2p"
            if node_name == NODE
            else "nvidia-device-plugin-daemonset-q4w8z",
            "namespace": "gpu-operator",
            "labels": {"app": "nvidia-device-plugin-daemonset"},
        },
        "spec": {
            "nodeName": node_name,
            "initContainers": [{"name": c["name"], "image": image} for c in init],
            "containers": [{"name": "nvidia-device-plugin", "image": image}],
        },
        "status": {
            "phase": "Running" if ready else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "initContainerStatuses": init,
        },
    }


def _init_states(waiting: str | None) -> list[tuple[str, bool]]:
    """The plugin's init containers in order, and whether each finished: those before
    `waiting` did; `waiting` and the rest did not (None: all finished)."""
    names = ["toolkit-validation", "config-manager-init"]
    cut = names.index(waiting) if waiting else len(names)
    return [(name, index < cut) for index, name in enumerate(names)]


def _verify(tmp_path, capsys, text, scenario):
    code, _ = run(tmp_path, scenario, *_config(tmp_path, text), *SHORT)
    out = capsys.readouterr().out
    assert code == 1, out
    report = out.splitlines()
    start = next(i for i, line in enumerate(report) if line.startswith("verify: FAILED"))
    return report[start : next(i for i, line in enumerate(report) if line.startswith("  fix:")) + 1]


OPERATOR_CASES = {
    "nfd-has-not-labelled-it": (
        OPERATOR,
        _standing(),
        [],
        "Node Feature Discovery has not labelled it "
        "feature.node.kubernetes.io/pci-10de.present=true, so the GPU Operator does not know it "
        "has a GPU",
        "kubectl -n gpu-operator get pods -o wide | grep node-feature-discovery-worker: a worker "
        "must run on the node (its tolerations, the operator chart's "
        "node-feature-discovery.worker.tolerations, must admit the pool's taints; redeploy the "
        "stack after changing them)",
    ),
    "operator-has-not-labelled-it": (
        OPERATOR,
        _standing(NFD),
        [],
        "the GPU Operator has not labelled it nvidia.com/gpu.deploy.device-plugin=true, so its "
        "device plugin does not run there",
        "kubectl get clusterpolicies -o jsonpath='{.items[0].status}' and kubectl -n "
        "gpu-operator logs deploy/gpu-operator",
    ),
    # Another node's plugin pod is not this node's.
    "no-plugin-pod": (
        OPERATOR,
        _standing(LABELLED),
        [_operator_plugin(ready=True, node_name="ip-10-0-7-7.ec2.internal")],
        "no GPU Operator device plugin pod on it although it is labelled for one",
        "kubectl -n gpu-operator describe ds nvidia-device-plugin-daemonset: its tolerations "
        "(the chart's daemonsets.tolerations) must admit the pool's taints",
    ),
    "plugin-waits-for-validation": (
        OPERATOR,
        _standing(LABELLED),
        [_operator_plugin(ready=False, waiting="toolkit-validation")],
        "the GPU Operator's device plugin nvidia-device-plugin-daemonset-x7k2p is not ready "
        "(init container toolkit-validation waits: the driver or toolkit validation)",
        "kubectl -n gpu-operator logs nvidia-device-plugin-daemonset-x7k2p -c toolkit-validation",
    ),
    "plugin-waits-for-its-config": (
        OPERATOR,
        _standing(LABELLED),
        [_operator_plugin(ready=False, waiting="config-manager-init")],
        "the GPU Operator's device plugin nvidia-device-plugin-daemonset-x7k2p is not ready "
        "(init container config-manager-init waits: the driver or toolkit validation)",
        "kubectl -n gpu-operator logs nvidia-device-plugin-daemonset-x7k2p -c config-manager-init",
    ),
    "plugin-runs-registers-none": (
        OPERATOR,
        _standing(LABELLED),
        [_operator_plugin(ready=True)],
        "the GPU Operator's device plugin nvidia-device-plugin-daemonset-x7k2p runs but "
        "registered none",
        "kubectl -n gpu-operator logs nvidia-device-plugin-daemonset-x7k2p: the GPUs it found, "
        "and its config",
    ),
    "mig-layout-failed": (
        MIG,
        _standing(
            {
                **LABELLED,
                "nvidia.com/mig.config": "gpu-pool",
                "nvidia.com/mig.config.state": "failed",
            }
        ),
        [_operator_plugin(ready=True)],
        "the MIG manager failed to apply the layout gpu-pool (nvidia.com/mig.config.state=failed)",
        f"kubectl -n gpu-operator logs -l app=nvidia-mig-manager --all-containers (on {NODE}): "
        "the layout must fit the node's GPU model; replace the node to start over",
    ),
    "mig-layout-pending": (
        MIG,
        _standing(
            {
                **NFD,
                "nvidia.com/gpu.deploy.device-plugin": "false",
                "nvidia.com/mig.config.state": "pending",
            }
        ),
        [],
        "the MIG manager is applying its layout (nvidia.com/mig.config.state=pending) and has "
        "stopped the device plugin meanwhile",
        "wait for the state to become success (minutes; a GPU reset or reboot); if it stays, "
        "kubectl -n gpu-operator logs -l app=nvidia-mig-manager",
    ),
}


# Each test below runs once per step of the GPU Operator's it names.
each_operator_step = pytest.mark.parametrize(
    ("text", "standing", "pods", "step", "fix"),
    OPERATOR_CASES.values(),
    ids=OPERATOR_CASES.keys(),
)


@each_operator_step
def test_verify_names_the_gpu_operators_step_not_taken(
    tmp_path, capsys, text, standing, pods, step, fix
):
    """gpu-pool's own plugin DaemonSets do not serve an operator pool: their reach is no
    evidence, and before this verify skipped such nodes and blamed the autoscaler."""
    scenario = Scenario(autoscaler=None, standing_nodes=[standing], pods=pods)
    resource = "nvidia.com/mig-1g.10gb.me" if text == MIG else "nvidia.com/gpu"
    assert _verify(tmp_path, capsys, text, scenario) == [
        f"verify: FAILED while waiting for 'scale-up': the node is Ready but advertises no "
        f"{resource} (GPU Operator)",
        f"  evidence: {NODE}: {step}",
        f"  fix: {fix}",
    ]


def test_doctor_names_the_gpu_operators_step_on_an_operator_pools_node(tmp_path, capsys):
    """doctor judged an operator pool's GPU-less node by gpu-pool's plugin DaemonSets; it now
    names the operator's step, and every resource a MIG pool's node should advertise."""
    scenario = Scenario(
        autoscaler=None,
        standing_nodes=[
            _standing(
                {
                    **LABELLED,
                    "nvidia.com/mig.config.state": "pending",
                    "node.kubernetes.io/instance-type": "p5.48xlarge",
                }
            )
        ],
        daemon_sets=[],
    )
    code, _ = run(tmp_path, scenario, *_config(tmp_path, MIG), command="doctor")
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    assert (
        f"[fail] node {NODE}: Ready, but 0 nvidia.com/mig-1g.10gb.me or nvidia.com/mig-3g.40gb; "
        "the MIG manager is applying its layout (nvidia.com/mig.config.state=pending) and has "
        "stopped the device plugin meanwhile"
    ) in lines, out
    # The operator runs the pool's device plugin: gpu-pool's own DaemonSet is not missing.
    assert not [line for line in lines if line.startswith("[fail] device plugin")], out


def test_doctor_passes_an_operator_pools_node_that_advertises_its_gpus(tmp_path, capsys):
    scenario = Scenario(standing_nodes=[_standing(LABELLED, gpus=1)], daemon_sets=[])
    run(tmp_path, scenario, *_config(tmp_path, OPERATOR), command="doctor")
    assert f"[  ok] node {NODE}: Ready, nvidia.com/gpu: 1" in capsys.readouterr().out


def test_a_standing_node_with_a_faulty_gpu_is_the_health_stage(tmp_path, capsys):
    """The plugin withdraws an unhealthy GPU: the node's fault, as the EKS node monitoring
    agent reports it, is the cause, not the plugin."""
    gpu = "AcceleratedHardwareReady"
    faulted = agent_condition(gpu, "False", agent_reason(gpu, "NvidiaXIDError", 79), "XID 79", 2)
    scenario = Scenario(autoscaler=None, standing_nodes=[_standing(conditions=[faulted])])
    assert _verify(tmp_path, capsys, "pool: {}\n", scenario) == [
        f"verify: FAILED while waiting for 'gpu healthy': the pool's node {NODE} is Ready "
        "without nvidia.com/gpu: its GPU is unhealthy",
        "  evidence: AcceleratedHardwareReady=False for 2 min: NvidiaXID79Error (XID 79); "
        "repair will replace it after 10 min",
        f"  fix: kubectl cordon {NODE} keeps new pods off it until then",
    ]


def test_a_time_sliced_node_advertising_whole_gpus_names_the_sharing_config(tmp_path, capsys):
    """The plugin reaches the node but runs without the pool's sharing config: the node
    advertises nvidia.com/gpu, not the pool's shares."""
    scenario = Scenario(
        autoscaler=None, standing_nodes=[_standing(gpus=1)], daemon_sets=[daemon_set()]
    )
    assert _verify(tmp_path, capsys, TIME_SLICED, scenario) == [
        "verify: FAILED while waiting for 'scale-up': the node is Ready but advertises no "
        "nvidia.com/gpu.shared (device plugin)",
        f"  evidence: {NODE} advertises nvidia.com/gpu: 1 instead",
        f"  evidence: nvidia-device-plugin-gpu selects and tolerates {NODE}",
        "  fix: the plugin runs without the pool's sharing config: the node's label "
        "nvidia.com/device-plugin.config must be gpu, then restart the plugin (kubectl -n "
        "kube-system rollout restart daemonset nvidia-device-plugin-gpu)",
    ]


def test_a_karpenter_pools_node_without_gpus_is_judged_before_karpenter(tmp_path, capsys):
    """Karpenter too counts the pool's node as able to take the pod, and makes no NodeClaim:
    the node's plugin is the stall."""
    scenario = karpenter_scenario(standing_nodes=[_standing()], daemon_sets=[])
    code, _ = karpenter_run(tmp_path, scenario, *SHORT)
    out = capsys.readouterr().out
    assert code == 1
    assert (
        "verify: FAILED while waiting for 'scale-up': the node is Ready but advertises no "
        "nvidia.com/gpu (device plugin)"
    ) in out.splitlines(), out


@pytest.mark.parametrize("provisioner", ["cluster-autoscaler", "karpenter"])
def test_a_pool_node_that_is_not_ready_is_evidence_of_the_stalled_scale_up(
    tmp_path, capsys, provisioner
):
    """A NotReady node holds a place of the pool's maximum: it is named beside the
    autoscaler's verdict, whichever autoscaler the pool has."""
    unready = node(name=NODE, ready=False, gpus=0)
    if provisioner == "karpenter":
        code, _ = karpenter_run(tmp_path, karpenter_scenario(standing_nodes=[unready]), *SHORT)
    else:
        code, _ = run(tmp_path, Scenario(standing_nodes=[unready]), *SHORT)
    out = capsys.readouterr().out
    assert code == 1
    assert (
        f"  evidence: pool node {NODE}: not Ready: Ready=False: container runtime network not ready"
    ) in out.splitlines(), out


@each_operator_step
def test_doctor_fails_an_operator_pools_node_at_each_step(
    tmp_path, capsys, text, standing, pods, step, fix
):
    """doctor's verdict on the node, for each step verify names: a failure, with the step and
    its fix."""
    node = {**standing, "metadata": {**standing["metadata"]}}
    node["metadata"]["labels"] = {
        **standing["metadata"]["labels"],
        "node.kubernetes.io/instance-type": "p5.48xlarge" if text == MIG else "g5.xlarge",
    }
    scenario = Scenario(autoscaler=None, standing_nodes=[node], pods=pods, daemon_sets=[])
    code, _ = run(tmp_path, scenario, *_config(tmp_path, text), command="doctor")
    lines = capsys.readouterr().out.splitlines()
    resources = (
        "nvidia.com/mig-1g.10gb.me or nvidia.com/mig-3g.40gb" if text == MIG else "nvidia.com/gpu"
    )
    at = lines.index(f"[fail] node {NODE}: Ready, but 0 {resources}; {step}")
    assert (code, lines[at + 1]) == (1, f"       fix: {fix}")
