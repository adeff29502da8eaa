"""Why a GPU Operator pool's Ready node advertises none of its GPUs: the steps the operator takes
before its device plugin registers them, read from the node's labels and the plugin's pod there.
gpu-pool's own device plugin DaemonSets do not serve such a node (the operator runs its own), so
their reach says nothing about it.

The steps, in order (NVIDIA/gpu-operator v26.3.1):
1. Node Feature Discovery labels the node with NVIDIA's PCI vendor (controllers/state_manager.go
   gpuNodeLabels); its worker must tolerate the pool's taints.
2. The operator then labels it `nvidia.com/gpu.present=true` and `nvidia.com/gpu.deploy.<operand>`
   for each operand, which the operand DaemonSets select (assets/state-device-plugin/
   0500_daemonset.yaml: nodeSelector nvidia.com/gpu.deploy.device-plugin=true).
3. A MIG pool's MIG manager applies the node's layout first: it sets `nvidia.com/mig.config.state`
   to pending (and rebooting, where a GPU reset needs one), turns the device plugin's label to
   false meanwhile, and ends at success or failed (NVIDIA/mig-parted, the MIG manager's
   reconfigure step).
4. The device plugin's pod starts once its init container has validated the host's driver and
   toolkit, and registers the GPUs.
"""

from __future__ import annotations

from typing import Any

from gpu_pool.cli.inspect.cluster import Verdict, as_dict, pod_running
from gpu_pool.model.versions import NVIDIA_GPU_OPERATOR

NFD_GPU_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
)
DEPLOY_DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
PLUGIN_POD_SELECTOR = "app=nvidia-device-plugin-daemonset"

_NAMESPACE = NVIDIA_GPU_OPERATOR.namespace
_OPERATOR_LOG = f"kubectl -n {_NAMESPACE} logs deploy/gpu-operator"


def operator_node_verdict(core: Any, node: dict[str, Any], resource: str) -> Verdict:
    """The first step the GPU Operator has not taken on `node` (API-shaped, Ready, advertising
    no `resource`), with the command that shows why; `core` reads the plugin's pods. Its detail
    is the step alone: the caller says which node and what it lacks."""
    name = node["metadata"]["name"]
    labels = node["metadata"].get("labels") or {}
    subject = f"node {name}"
    state = labels.get(MIG_CONFIG_STATE)
    if state == "failed":
        return Verdict(
            "fail",
            subject,
            f"the MIG manager failed to apply the layout "
            f"{labels.get('nvidia.com/mig.config')} ({MIG_CONFIG_STATE}=failed)",
            f"kubectl -n {_NAMESPACE} logs -l app=nvidia-mig-manager --all-containers (on "
            f"{name}): the layout must fit the node's GPU model; replace the node to start over",
        )
    if state in ("pending", "rebooting"):
        return Verdict(
            "fail",
            subject,
            f"the MIG manager is applying its layout ({MIG_CONFIG_STATE}={state}) and "
            "has stopped the device plugin meanwhile",
            "wait for the state to become success (minutes; a GPU reset or reboot); if it "
            f"stays, kubectl -n {_NAMESPACE} logs -l app=nvidia-mig-manager",
        )
    if not any(labels.get(label) == "true" for label in NFD_GPU_LABELS):
        return Verdict(
            "fail",
            subject,
            f"Node Feature Discovery has not labelled it {NFD_GPU_LABELS[0]}=true, so "
            "the GPU Operator does not know it has a GPU",
            f"kubectl -n {_NAMESPACE} get pods -o wide | grep node-feature-discovery-worker: "
            "a worker must run on the node (its tolerations, the operator chart's "
            "node-feature-discovery.worker.tolerations, must admit the pool's taints; redeploy "
            "the stack after changing them)",
        )
    if labels.get(DEPLOY_DEVICE_PLUGIN) != "true":
        return Verdict(
            "fail",
            subject,
            f"the GPU Operator has not labelled it {DEPLOY_DEVICE_PLUGIN}=true, so its "
            "device plugin does not run there",
            f"kubectl get clusterpolicies -o jsonpath='{{.items[0].status}}' and {_OPERATOR_LOG}",
        )
    pods = core.list_namespaced_pod(
        _NAMESPACE,
        label_selector=PLUGIN_POD_SELECTOR,
        field_selector=f"spec.nodeName={name}",
    ).items
    if not pods:
        return Verdict(
            "fail",
            subject,
            "no GPU Operator device plugin pod on it although it is labelled for one",
            f"kubectl -n {_NAMESPACE} describe ds nvidia-device-plugin-daemonset: its "
            "tolerations (the chart's daemonsets.tolerations) must admit the pool's taints",
        )
    pod = as_dict(pods[0])
    pod_name = pod["metadata"]["name"]
    if not pod_running(pod):
        waiting = _waiting_init_container(pod)
        where = f" -c {waiting}" if waiting else ""
        waits = f" (init container {waiting} waits: the driver or toolkit validation)"
        return Verdict(
            "fail",
            subject,
            f"the GPU Operator's device plugin {pod_name} is not ready{waits if waiting else ''}",
            f"kubectl -n {_NAMESPACE} logs {pod_name}{where}",
        )
    return Verdict(
        "fail",
        subject,
        f"the GPU Operator's device plugin {pod_name} runs but registered none",
        f"kubectl -n {_NAMESPACE} logs {pod_name}: the GPUs it found, and its config",
    )


def _waiting_init_container(pod: dict[str, Any]) -> str | None:
    """The first init container of the pod that has not finished, if any."""
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if ((status.get("state") or {}).get("terminated") or {}).get("exitCode") != 0:
            return str(status["name"])
    return None
