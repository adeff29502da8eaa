"""The NVIDIA DRA driver (`gpu_software: dra-driver`): one Helm release per cluster.

The chart (kubernetes-sigs/dra-driver-nvidia-gpu, deployments/helm/dra-driver-nvidia-gpu at
v0.4.1; until 25.12.0 NVIDIA/k8s-dra-driver-gpu's nvidia-dra-driver-gpu) installs
cluster-scoped objects, the DeviceClasses `gpu.nvidia.com` and, with ComputeDomains,
`compute-domain-daemon.nvidia.com` and `compute-domain-default-channel.nvidia.com`
(templates/deviceclass-*.yaml, fixed names), so a second release on the cluster would collide
with the first: every DRA pool shares one release, whose kubelet plugin DaemonSet
(templates/kubeletplugin.yaml) runs exactly on the DRA pools' nodes. Its pod terms are, like a
device plugin's, what the one-advertiser-per-node rule (checks/between_pools.py) reads: a DRA
node runs the kubelet plugin and no device plugin (EKS user guide, "Use the NVIDIA DRA driver
or device plugin on Amazon EKS": both on one node silently oversubscribe its GPUs).

DRA pools get no device plugin chart (gpu_software.py returns none for them), and their nodes
carry `nvidia.com/gpu.deploy.operands=false` like every pool that does not use the GPU
Operator (node_template.node_labels), so an operator on the cluster deploys no device plugin
there. They also carry `nvidia.com/gpu.present=true`, one of the labels the chart's default
kubelet plugin affinity accepts (values.yaml kubeletPlugin.affinity); ours replaces that affinity.
The EFA device plugin of an EFA pool stays: it advertises EFA interfaces, not GPUs, and the
EKS user guide installs it beside the DRA driver ("Use P6e-GB200 UltraServers with Amazon EKS").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_pool.model.labels import POOL_LABEL
from gpu_pool.model.versions import NVIDIA_DRA_DRIVER
from gpu_pool.plan.gpu_software import GpuSoftwareChart
from gpu_pool.plan.pool import PoolPlan

DRA_DRIVER = "dra-driver"
# The chart's DeviceClasses (templates/deviceclass-*.yaml at v0.4.1): whole GPUs, with
# resources.gpus.enabled; with resources.computeDomains.enabled, a ComputeDomain's default IMEX
# channel (the class the controller's channel claim templates name) and its IMEX daemons.
GPU_DEVICE_CLASS = "gpu.nvidia.com"
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
DAEMON_DEVICE_CLASS = "compute-domain-daemon.nvidia.com"
DRA_CONSTRUCT_ID = "NvidiaDraDriver"
# The release keeps the 25.12.0 install's name (and namespace, versions.py): docs/upgrade.md.
DRA_RELEASE = "nvidia-dra-driver-gpu"

# The chart's CRDs (its crds/ folder at v0.4.1): Helm installs them with a release and never
# upgrades them (Helm docs, "Custom Resource Definitions"), so a chart upgrade applies them by
# hand first, from the new version's tag (the repository's docs/upgrade.md, step 1).
DRA_CRDS = (
    "resource.nvidia.com_computedomains.yaml",
    "resource.nvidia.com_computedomaincliques.yaml",
)


def dra_crd_urls(version: str) -> list[str]:
    """Where the chart of `version` (at its tag, `v<version>`) keeps each of DRA_CRDS."""
    return [
        "https://raw.githubusercontent.com/kubernetes-sigs/dra-driver-nvidia-gpu/refs/tags/"
        f"v{version}/deployments/helm/dra-driver-nvidia-gpu/crds/{name}"
        for name in DRA_CRDS
    ]


# The values that do not depend on the pools, each against the chart's values.yaml and
# templates at v0.4.1:
# - nameOverride nvidia-dra-driver-gpu: the name its objects (DaemonSet, Deployment, service
#   accounts, RBAC) and labels (app.kubernetes.io/name, `<name>-component`) are built from
#   (templates/_helpers.tpl), the chart's name by default, which 0.4.0 renamed from
#   nvidia-dra-driver-gpu. The repository's docs/upgrade.md sets it when upgrading a 25.12.0
#   release: without it Helm creates a second kubelet plugin DaemonSet and controller under
#   the new name beside the old ones. Set on every cluster, so a new one looks like an upgraded
#   one (and `gpu-pool verify` reads both by the same labels).
# - nvidiaDriverRoot "/": the EKS AL2023 NVIDIA AMIs install the driver on the host root (the
#   chart's default, stated so a chart upgrade cannot move it).
# - resourceApiVersion resource.k8s.io/v1: DRA is GA (v1) from Kubernetes 1.34, the oldest
#   minor a DRA pool may run on (checks/dra.py); explicit rather than the chart's detection
#   from the API server's advertised versions, which its values.yaml warns may be wrong.
# - controller: the ComputeDomain controller only prefers a node-role.kubernetes.io/control-plane
#   node (which EKS never shows) and tolerates CriticalAddonsOnly and the control-plane taints,
#   so by default it may land on a GPU node. Here it must run on a node of no GPU pool (no
#   gpu-pool.io/pool label), like the other controllers, so it never keeps a GPU node from
#   scaling down; our tolerations list replaces the chart's (Helm replaces lists). Helm merges
#   maps, so the chart's preferred control-plane term and its podAntiAffinity between
#   controller replicas stay beside our required term: the first matches no EKS node, the
#   second no pod (its label is the chart's default name's; one replica).
DRA_DRIVER_STATIC_VALUES: dict[str, Any] = {
    "nameOverride": "nvidia-dra-driver-gpu",
    "nvidiaDriverRoot": "/",
    "resourceApiVersion": "resource.k8s.io/v1",
    "controller": {
        "tolerations": [],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": POOL_LABEL, "operator": "DoesNotExist"}]}
                    ]
                }
            }
        },
    },
}


def dra_pools(plans: Sequence[PoolPlan]) -> list[PoolPlan]:
    """The pools of `plans` whose GPUs the DRA driver advertises."""
    return [p for p in plans if p.gpu_software == DRA_DRIVER]


def driver_pools(plans: Sequence[PoolPlan]) -> list[PoolPlan]:
    """The pools of `plans` whose nodes run our release's kubelet plugin: for their GPUs,
    their ComputeDomains (`compute_domains`, plan/pool.py), or both. Not Auto Mode pools: their
    nodes run the driver in their node runtime from Kubernetes 1.36 (EKS UG "Manage hardware
    devices on Amazon EKS"; older minors are GP-DRA-02's), and declare nothing for it."""
    return [
        p
        for p in plans
        if (p.gpu_software == DRA_DRIVER or p.compute_domains) and p.provisioner != "auto-mode"
    ]


def dra_resources(pools: Sequence[PoolPlan]) -> dict[str, Any]:
    """The chart's two features, each on when a pool of `pools` needs it: GPUs for a pool whose
    GPUs the driver allocates (`gpu_software: dra-driver`); ComputeDomains (the controller, the
    kubelet plugin's ComputeDomain plugin and the IMEX daemons it starts) for a pool with
    `compute_domains`. A ComputeDomain-only release is the EKS UltraServer guide's
    (dra-values.yaml: `resources.gpus.enabled: false`): the kubelet plugin then advertises no
    GPU (templates/kubeletplugin.yaml runs its `gpus` container only with resources.gpus.enabled,
    and templates/deviceclass-gpu.yaml creates gpu.nvidia.com only then), the device plugin
    does."""
    return {
        "gpus": {"enabled": bool(dra_pools(pools))},
        "computeDomains": {"enabled": any(p.compute_domains for p in pools)},
    }


# templates/validation.yaml fails the install when resources.gpus.enabled is true without
# gpuResourcesEnabledOverride, until KEP 5004 is GA, because the GPU plugin must not share a
# node with the device plugin; gpu-pool guarantees that (no device plugin chart for a DRA pool,
# the operator's opt-out label, GP-PAIR-03/04). Set only with GPUs, as EKS's guides do.
GPU_RESOURCES_OVERRIDE = {"gpuResourcesEnabledOverride": True}


def kubelet_plugin_values(pools: Sequence[PoolPlan]) -> dict[str, Any]:
    """The kubelet plugin on the DRA pools' nodes only: selected by the pool label (its list
    replaces the chart's default affinity terms, as Helm replaces lists), tolerating each DRA
    pool's taints each once (the list replaces the chart's default, which tolerates
    nvidia.com/gpu:NoSchedule on every node). Pools in name order, so the
    values do not depend on the order the pools were added in."""
    selected = {"key": POOL_LABEL, "operator": "In", "values": sorted({p.name for p in pools})}
    tolerations: list[dict[str, str]] = []
    for pool in sorted(pools, key=lambda p: p.name):
        for taint in pool.taints:
            toleration = taint.any_value_toleration()
            if toleration not in tolerations:
                tolerations.append(toleration)
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [selected]}]
                }
            }
        },
        "tolerations": tolerations,
    }


def kubelet_plugin_pod(kubelet_plugin: dict[str, Any]) -> dict[str, Any]:
    """The kubelet plugin pods' scheduling terms: the chart's nodeSelector is empty and our
    affinity and tolerations replace its defaults (templates/kubeletplugin.yaml)."""
    return {"affinity": kubelet_plugin["affinity"], "tolerations": kubelet_plugin["tolerations"]}


def dra_driver_chart(plans: Sequence[PoolPlan]) -> GpuSoftwareChart | None:
    """The cluster's one DRA driver release for the pools among `plans` that run it
    (`driver_pools`); None without any. Its kubelet plugin is a GPU advertiser
    (`device_plugin_pod`) only when it allocates GPUs."""
    pools = driver_pools(plans)
    if not pools:
        return None
    kubelet_plugin = kubelet_plugin_values(pools)
    resources = dra_resources(pools)
    gpus = resources["gpus"]["enabled"]
    return GpuSoftwareChart(
        construct_id=DRA_CONSTRUCT_ID,
        pin=NVIDIA_DRA_DRIVER,
        version=NVIDIA_DRA_DRIVER.version,
        release=DRA_RELEASE,
        values={
            **DRA_DRIVER_STATIC_VALUES,
            **(GPU_RESOURCES_OVERRIDE if gpus else {}),
            "resources": resources,
            "kubeletPlugin": kubelet_plugin,
        },
        device_plugin_pod=kubelet_plugin_pod(kubelet_plugin) if gpus else None,
    )


# Karpenter's chart setting for DRA (charts/karpenter/values.yaml at 1.15.0, ALPHA, default
# false): it turns on the AWS feature gates draNVIDIAGPU and draEFA and sets ignoreDRARequests
# to false, so Karpenter sizes new nodes for a pending pod's ResourceClaims from the device
# metadata built into the release (karpenter.sh "Utilizing GPUs and EFAs with Dynamic Resource
# Allocation", "Enabling Karpenter Support"). The chart fails the render when it is combined
# with any of those three keys (templates/_helpers.tpl "karpenter.dra"), so gpu-pool sets none
# of them. draEFA acts only on claims for dra.net devices, through the DeviceClass
# efa.networking.k8s.aws that the EFA DRA driver's chart creates; with the NVIDIA driver alone
# no such claim can be allocated anywhere, on a new node or an old one.
KARPENTER_DRA_SETTINGS = {"enableDRA": True}


def karpenter_dra_settings(plans: Sequence[PoolPlan]) -> dict[str, bool]:
    """Karpenter's `settings` for DRA: KARPENTER_DRA_SETTINGS when a Karpenter pool of the
    cluster uses the DRA driver, else none (the chart's default, false)."""
    dra = any(p.provisioner == "karpenter" for p in dra_pools(plans))
    return dict(KARPENTER_DRA_SETTINGS) if dra else {}
