"""Reads a running cluster's NVIDIA DRA driver for a DRA pool's nodes (shared by verify and doctor).

A DRA node's GPUs come up in order: the driver's kubelet plugin pod runs on the node, then
publishes the node's GPUs as ResourceSlices of driver `gpu.nvidia.com` (and, with
ComputeDomains, its IMEX channels as slices of `compute-domain.nvidia.com`), then the scheduler
can allocate a claim from them. `node_devices` names the first of these that is missing. Names
and labels are the driver's own at kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1, with the
nameOverride gpu-pool sets (plan/dra.py) that keeps the 25.12.0 chart's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client

from gpu_pool.cli.inspect.cluster import (
    DEVICE_PLUGIN_SELECTOR,
    Verdict,
    as_dict,
    pod_running,
)
from gpu_pool.cli.smoke_test import COMPUTE_DOMAIN_API
from gpu_pool.plan.dra import CHANNEL_DEVICE_CLASS, GPU_DEVICE_CLASS
from gpu_pool.plan.efa_dra import EFA_DRA_DRIVER_NAME, EFA_DRA_RELEASE

# The chart's label on its DaemonSets and pods, and the per-component selector label of its pods
# (deployments/helm/dra-driver-nvidia-gpu/templates/_helpers.tpl: templateLabels and
# selectorLabels, from nameOverride; kubeletplugin.yaml names its component kubelet-plugin).
DRIVER_SELECTOR = "app.kubernetes.io/name=nvidia-dra-driver-gpu"
COMPONENT_LABEL = "nvidia-dra-driver-gpu-component"
KUBELET_PLUGIN = "kubelet-plugin"
# The drivers that publish ResourceSlices (cmd/gpu-kubelet-plugin/main.go and
# cmd/compute-domain-kubelet-plugin/main.go, DriverName).
GPU_DRIVER = "gpu.nvidia.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
# The label the ComputeDomain controller puts on a domain's IMEX daemon DaemonSet and its pods,
# valued with the domain's UID (cmd/compute-domain-controller/computedomain.go and
# templates/compute-domain-daemon.tmpl.yaml).
COMPUTE_DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
# Device plugin pods that advertise nvidia.com/gpu: gpu-pool's chart's (its selector label) and
# the GPU Operator's (NVIDIA/gpu-operator v26.3.1 assets/state-device-plugin/0500_daemonset.yaml).
DEVICE_PLUGIN_POD_SELECTORS = (DEVICE_PLUGIN_SELECTOR, "app=nvidia-device-plugin-daemonset")

# An Auto Mode node's driver is not a pod gpu-pool can point at.
_RUNTIME_FIX = (
    "Auto Mode runs the NVIDIA DRA driver in its nodes' runtime from Kubernetes 1.36: check the "
    "cluster's version (aws eks describe-cluster) and the node's events (kubectl describe node)"
)
_SLICES_FIX = (
    "the plugin runs but publishes nothing: kubectl -n {namespace} logs {pod} -c {container} "
    "(a driver root it cannot read, or no GPU it can see)"
)


def resource_api(core: Any) -> Any:
    """The resource.k8s.io/v1 client on the same connection as `core` (CoreV1Api)."""
    return client.ResourceV1Api(core.api_client)


def kubelet_plugin_daemon_sets(apps: Any) -> list[Any]:
    """The driver's kubelet-plugin DaemonSets, in any namespace: of the chart's DaemonSets, the
    one whose pods carry the kubelet-plugin component label."""
    return [
        daemon_set
        for daemon_set in apps.list_daemon_set_for_all_namespaces(
            label_selector=DRIVER_SELECTOR
        ).items
        if (daemon_set.spec.selector.match_labels or {}).get(COMPONENT_LABEL) == KUBELET_PLUGIN
    ]


def kubelet_plugin_pods(core: Any) -> dict[str, dict[str, Any]]:
    """The driver's kubelet-plugin pods by the node they are bound to."""
    pods = core.list_pod_for_all_namespaces(
        label_selector=f"{COMPONENT_LABEL}={KUBELET_PLUGIN}"
    ).items
    found = {}
    for pod in map(as_dict, pods):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            found[node] = pod
    return found


def published_devices(resource: Any, node: str, driver: str) -> int:
    """How many devices `driver` publishes for `node` in its ResourceSlices (0: none)."""
    slices = resource.list_resource_slice(
        field_selector=f"spec.nodeName={node},spec.driver={driver}"
    ).items
    return sum(len(s.spec.devices or []) for s in slices)


def efa_stall(resource: Any, node: str) -> Stall | None:
    """Why a pod's EFA claim cannot be allocated on the Ready node `node` of an EFA DRA pool
    (`efa_software: dra-driver`): the EFA DRA driver publishes no ResourceSlice there; None
    when it does."""
    if published_devices(resource, node, EFA_DRA_DRIVER_NAME) > 0:
        return None
    return Stall(
        "efa published",
        f"no ResourceSlice of {EFA_DRA_DRIVER_NAME} on the node: the EFA DRA driver publishes "
        "no EFA interface",
        f"kubectl get resourceslices --field-selector spec.nodeName={node},"
        f"spec.driver={EFA_DRA_DRIVER_NAME}: none",
        "its DaemonSet must select the node (the gpu-pool.io/pool label) and tolerate the "
        f"pool's taints: kubectl -n kube-system get ds {EFA_DRA_RELEASE}; a pod there that does "
        f"not start: kubectl -n kube-system describe pod -l app={EFA_DRA_RELEASE}",
    )


@dataclass(frozen=True)
class Stall:
    """The first missing step of a DRA node's GPU stack: the stage it stops before, what was
    seen and what to check next."""

    stage: str
    cause: str
    evidence: str
    fix: str


def node_devices(
    resource: Any,
    node: str,
    plugin_pods: dict[str, dict[str, Any]],
    compute_domains: bool,
    in_runtime: bool = False,
) -> tuple[Stall | None, int]:
    """The DRA node `node`'s GPUs in its driver's ResourceSlices, and why a claim cannot be
    allocated there yet: None when its kubelet plugin runs and publishes its GPUs (and, with
    `compute_domains`, its IMEX channels). `in_runtime`: an Auto Mode node, whose driver is
    part of its node runtime (EKS UG "Manage hardware devices on Amazon EKS"), not a pod."""
    pod = plugin_pods.get(node)
    if not in_runtime and (pod is None or not pod_running(pod)):
        seen = (
            f"no pod labelled {COMPONENT_LABEL}={KUBELET_PLUGIN} on {node}"
            if pod is None
            else f"{pod['metadata']['namespace']}/{pod['metadata']['name']} on {node}: "
            f"{(pod.get('status') or {}).get('phase', 'Unknown')}, not ready"
        )
        stall = Stall(
            "driver running",
            "the DRA driver's kubelet plugin is not running on the node",
            seen,
            "its DaemonSet must select the node (the gpu-pool.io/pool label) and tolerate the "
            f"pool's taints: kubectl get ds -A -l {DRIVER_SELECTOR}; a pod there that does not "
            "start: kubectl describe pod",
        )
        return stall, 0
    gpus = published_devices(resource, node, GPU_DRIVER)
    for driver in [GPU_DRIVER, *([COMPUTE_DOMAIN_DRIVER] if compute_domains else [])]:
        if (gpus if driver == GPU_DRIVER else published_devices(resource, node, driver)) == 0:
            container = "gpus" if driver == GPU_DRIVER else "compute-domains"
            stall = Stall(
                "devices published",
                f"no ResourceSlice of {driver} on the node: the kubelet plugin publishes nothing",
                f"kubectl get resourceslices --field-selector spec.nodeName={node},"
                f"spec.driver={driver}: none",
                _RUNTIME_FIX
                if pod is None
                else _SLICES_FIX.format(
                    namespace=pod["metadata"]["namespace"],
                    pod=pod["metadata"]["name"],
                    container=container,
                ),
            )
            return stall, gpus
    return None, gpus


def node_verdict(
    resource: Any,
    node: str,
    plugin_pods: dict[str, dict[str, Any]],
    compute_domains: bool,
    in_runtime: bool = False,
) -> Verdict:
    """A Ready DRA node: its GPUs as the driver publishes them, or the step that is missing."""
    stall, gpus = node_devices(resource, node, plugin_pods, compute_domains, in_runtime)
    if stall is not None:
        return Verdict("fail", f"node {node}", f"Ready, but {stall.evidence}", stall.fix)
    return Verdict("ok", f"node {node}", f"Ready, {gpus} GPU(s) in ResourceSlices of {GPU_DRIVER}")


def device_plugin_pods(core: Any, node: str) -> list[str]:
    """The device plugin pods (gpu-pool's chart's or the GPU Operator's) bound to `node`, as
    namespace/name."""
    found = []
    for selector in DEVICE_PLUGIN_POD_SELECTORS:
        pods = core.list_pod_for_all_namespaces(
            label_selector=selector, field_selector=f"spec.nodeName={node}"
        ).items
        found += [f"{p.metadata.namespace}/{p.metadata.name}" for p in pods]
    return found


def one_advertiser_verdict(core: Any, node: str) -> Verdict | None:
    """A failing verdict when a device plugin runs on the DRA node `node` beside the driver:
    two advertisers of one node's GPUs hand the same GPU to a claim and to an nvidia.com/gpu
    request."""
    pods = device_plugin_pods(core, node)
    if not pods:
        return None
    return Verdict(
        "fail",
        f"node {node}",
        f"a device plugin runs on this DRA node beside the DRA driver: {', '.join(pods)}",
        "one GPU advertiser per node: the device plugin's DaemonSet must not select the pool "
        "(redeploy the stack: gpu_software: dra-driver installs none there); the GPU "
        "Operator's: label the node nvidia.com/gpu.deploy.operands=false",
    )


def kubelet_plugin_rollout(daemon_sets: list[Any]) -> list[Verdict]:
    """The driver's kubelet-plugin DaemonSet: there, and its pods ready where it runs."""
    if not daemon_sets:
        return [
            Verdict(
                "fail",
                "DRA driver",
                f"no kubelet-plugin DaemonSet labelled {DRIVER_SELECTOR} in any namespace",
                "deploy the stack with pool.gpu_software: dra-driver",
            )
        ]
    verdicts = []
    for daemon_set in daemon_sets:
        namespace, name = daemon_set.metadata.namespace, daemon_set.metadata.name
        # Both are required fields of DaemonSetStatus. 0/0 is a pool at zero; a node of a DRA
        # pool the DaemonSet does not reach is that node's verdict.
        desired = daemon_set.status.desired_number_scheduled
        ready = daemon_set.status.number_ready
        ok = ready == desired
        verdicts.append(
            Verdict(
                "ok" if ok else "fail",
                f"DaemonSet {namespace}/{name}",
                f"{ready}/{desired} ready",
                "" if ok else f"kubectl -n {namespace} describe ds {name}",
            )
        )
    return verdicts


def device_class_verdicts(resource: Any, compute_domains: bool) -> list[Verdict]:
    """The driver's DeviceClasses a pool's claims name: gpu.nvidia.com, and with
    `compute_domains` the IMEX channel's (templates/deviceclass-*.yaml, installed by the chart
    with its gpus and computeDomains features)."""
    names = {GPU_DEVICE_CLASS: "gpus"}
    if compute_domains:
        names[CHANNEL_DEVICE_CLASS] = "computeDomains"
    verdicts = []
    for name, feature in names.items():
        try:
            resource.read_device_class(name)
        except client.ApiException as err:
            if err.status != 404:
                raise
            verdicts.append(
                Verdict(
                    "fail",
                    f"DeviceClass {name}",
                    "missing: no claim for it can be allocated",
                    f"the driver's chart installs it with resources.{feature}.enabled: redeploy "
                    "the stack",
                )
            )
            continue
        verdicts.append(Verdict("ok", f"DeviceClass {name}", "installed"))
    return verdicts


def compute_domain_state(custom: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """The ComputeDomain `name`, or None when it is gone."""
    group, version = COMPUTE_DOMAIN_API.split("/")
    try:
        found: dict[str, Any] = custom.get_namespaced_custom_object(
            group, version, namespace, "computedomains", name
        )
    except client.ApiException as err:
        if err.status != 404:
            raise
        return None
    return found


def imex_daemon_pods(core: Any, uid: str) -> list[dict[str, Any]]:
    """The IMEX daemon pods the ComputeDomain controller runs for the domain of `uid`."""
    pods = core.list_pod_for_all_namespaces(label_selector=f"{COMPUTE_DOMAIN_LABEL}={uid}")
    return [as_dict(p) for p in pods.items]


class DriverReader:
    """The driver as one doctor run reads it: its kubelet-plugin pods listed once, ResourceSlices
    and device plugin pods per node."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.resource = resource_api(core)
        self._plugin_pods: dict[str, dict[str, Any]] | None = None

    def node_verdicts(
        self, node: str, compute_domains: bool, in_runtime: bool = False
    ) -> list[Verdict]:
        """A Ready node of a DRA pool: its published GPUs (or the missing step), and a failing
        verdict if a device plugin runs there too; `in_runtime` as for `node_devices`."""
        if self._plugin_pods is None:
            self._plugin_pods = kubelet_plugin_pods(self.core)
        verdicts = [
            node_verdict(self.resource, node, self._plugin_pods, compute_domains, in_runtime)
        ]
        second = one_advertiser_verdict(self.core, node)
        return verdicts + ([second] if second is not None else [])
