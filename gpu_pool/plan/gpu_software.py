"""What makes a GPU node advertise `nvidia.com/gpu`: the device plugin or the GPU Operator.

The AL2023 NVIDIA AMI carries driver and container toolkit but not the device plugin; the
Bottlerocket NVIDIA AMI ships the plugin itself (EKS user guide, "Amazon EKS optimized
accelerated AMIs"; Bottlerocket's -nvidia variants).

Every GPU node must run exactly one device plugin, whatever labels users give their pools:
- each pool's device plugin selects the pool's nodes by the label that names the pool
  (`gpu-pool.io/pool`), so pools whose labels overlap never share plugin pods, and the plugin
  stays off CPU nodes (where it crash-loops, eksctl#8858). The chart's default affinity requires
  one of three labels EKS nodes on <= 1.34 do not carry; pool nodes are labelled
  `nvidia.com/gpu.present=true`, which satisfies it on every version. One toleration per pool
  taint lets it in.
- the GPU Operator is cluster-wide: it deploys its operands, device plugin included, on every
  NVIDIA node unless the node is labelled `nvidia.com/gpu.deploy.operands=false` (NVIDIA GPU
  Operator docs, "Getting started", operands). Nodes of every pool that does not use the
  operator carry that label, so the operator serves its own pool only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.model.labels import GPU_PRESENT_LABEL, OPERANDS_LABEL, POOL_LABEL
from gpu_pool.model.versions import (
    EFA_DEVICE_PLUGIN,
    NVIDIA_DEVICE_PLUGIN,
    NVIDIA_GPU_OPERATOR,
    ChartPin,
)
from gpu_pool.plan.sharing import MIG_DISABLED, SharingPlan
from gpu_pool.settings import PoolSettings, Taint, deep_merge
from gpu_pool.settings.controllers import GpuMetricsChoice

# The ConfigMaps the GPU Operator creates from its values: the device plugin's configs and the
# MIG manager's configurations (chart v26.3.1 values devicePlugin.config, migManager.config).
OPERATOR_PLUGIN_CONFIG = "gpu-pool-device-plugin-config"
OPERATOR_MIG_CONFIG = "gpu-pool-mig-parted-config"

# The scheduling part of the pinned chart's values.yaml (NVIDIA/k8s-device-plugin,
# deployments/helm/nvidia-device-plugin/values.yaml, unchanged 0.15 .. 0.20): the DaemonSet
# template passes nodeSelector, affinity and tolerations through as they are.
DEVICE_PLUGIN_CHART_DEFAULTS: dict[str, Any] = {
    "nodeSelector": {},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                    for key, value in (
                        ("feature.node.kubernetes.io/pci-10de.present", "true"),
                        ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                        ("nvidia.com/gpu.present", "true"),
                    )
                ]
            }
        }
    },
    "tolerations": [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ],
}

# The chart keeps this deprecated toleration in its defaults; a values list replaces the
# defaults wholesale, so it is carried over.
_CRITICAL_ADDONS_TOLERATION = {"key": "CriticalAddonsOnly", "operator": "Exists"}


def resolved_gpu_software(pool: PoolSettings, *, ultraserver: bool) -> str:
    """`gpu_software`, or its default: nothing on Bottlerocket and on Auto Mode (both ship the
    plugin); on AL2023 the GPU Operator for an UltraServer pool (`ultraserver`), as EKS's guide
    installs it ("Use P6e-GB200 UltraServers with Amazon EKS": its device plugin for the GPUs,
    NFD and GFD for the `nvidia.com/gpu.clique` label its jobs select on, because the DRA
    driver's GPU allocation is still experimental), else the device plugin."""
    if pool.gpu_software is not None:
        return pool.gpu_software
    if pool.provisioner == "auto-mode" or is_bottlerocket(pool):
        return "none"
    return "gpu-operator" if ultraserver else "device-plugin"


def resolved_compute_domains(pool: PoolSettings, *, ultraserver: bool) -> bool:
    """Whether the pool's nodes run the NVIDIA DRA driver's ComputeDomains: `compute_domains`,
    or by default on an UltraServer pool, whose instances share an NVLink domain only through
    the IMEX daemons that ComputeDomains start (EKS UG "Use P6e-GB200 UltraServers with Amazon
    EKS")."""
    if pool.compute_domains is not None:
        return pool.compute_domains == "dra-driver"
    return ultraserver


def is_bottlerocket(pool: PoolSettings) -> bool:
    """Whether the pool's AMI (explicit type, else family) is Bottlerocket."""
    ami = pool.ami_type or pool.ami_family
    return ami.startswith("BOTTLEROCKET")


def device_plugin_values(
    selector_labels: Mapping[str, str],
    taints: Sequence[Taint],
    sharing: SharingPlan | None,
    *,
    efa: bool,
) -> dict[str, Any]:
    """The plugin on the selected nodes only; a sharing pool's config as the chart's one config
    and its default (the nodes' config label names it too). On EFA pools MOFED is off
    explicitly: plugin 0.19.0 to 0.19.2 turned it on by default (mounting /dev/infiniband, which
    the EFA plugin owns) and 0.19.3 reverted it (NVIDIA/k8s-device-plugin v0.20.0 values.yaml
    `mofedEnabled: null`, passed as MOFED_ENABLED only when a bool); a version override must not
    bring it back."""
    values: dict[str, Any] = {
        "nodeSelector": dict(selector_labels),
        "tolerations": [_CRITICAL_ADDONS_TOLERATION, *(t.any_value_toleration() for t in taints)],
    }
    if sharing is not None:
        values["config"] = {
            "map": sharing.device_plugin_config_map(),
            "default": sharing.config_name,
        }
    if efa:
        values["mofedEnabled"] = False
    return values


def gpu_operator_values(
    pool: PoolSettings,
    sharing: SharingPlan | None = None,
    *,
    metrics: GpuMetricsChoice = "none",
    compute_domains: bool = False,
) -> dict[str, Any]:
    """Operator with the AMI's own driver and toolkit (and, on Bottlerocket, device plugin); a
    sharing pool's device plugin config, and for MIG its strategy and layout. Its own DCGM
    exporter (on by default, chart v26.3.1 `dcgmExporter.enabled`) stays, except with
    `metrics.gpu: cloudwatch`: the CloudWatch add-on runs a DCGM exporter on these nodes too,
    and each exporter starts its own DCGM host engine (NVIDIA DCGM-Exporter docs, "Running
    DCGM Exporter"), two of which contend for the GPUs' profiling metrics.

    A ComputeDomain pool gets the EKS UltraServer guide's values ("Use P6e-GB200 UltraServers
    with Amazon EKS", gpu-operator-values.yaml): NFD and GFD on, stated so a chart default
    cannot drop the `nvidia.com/gpu.clique` label GFD writes, and the MIG manager off (driver
    580's CDMM on GB200 supports no MIG, the same guide)."""
    tolerations = [t.any_value_toleration() for t in pool.taints]
    device_plugin: dict[str, Any] = {"enabled": not is_bottlerocket(pool)}
    values: dict[str, Any] = {
        "driver": {"enabled": pool.gpu_operator.driver_enabled},
        "toolkit": {"enabled": pool.gpu_operator.toolkit_enabled},
        "devicePlugin": device_plugin,
        # Operands and the NFD worker that labels GPU nodes must reach the tainted pool.
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": tolerations}},
    }
    if metrics == "cloudwatch":
        values["dcgmExporter"] = {"enabled": False}
    if compute_domains:
        values |= {"nfd": {"enabled": True}, "gfd": {"enabled": True}}
        values["migManager"] = {"enabled": False}
    if sharing is None:
        return values
    device_plugin["config"] = {
        "create": True,
        "name": OPERATOR_PLUGIN_CONFIG,
        "default": sharing.config_name,
        "data": sharing.device_plugin_config_map(),
    }
    if sharing.mode == "mig":
        values["mig"] = {"strategy": sharing.settings.strategy}
        values["migManager"] = {
            "enabled": True,
            "config": {
                "create": True,
                "name": OPERATOR_MIG_CONFIG,
                "default": MIG_DISABLED,
                "data": sharing.mig_parted_config(),
            },
        }
    return values


@dataclass(frozen=True)
class GpuSoftwareChart:
    """The chart that makes a pool's GPUs allocatable, and where its device plugin runs."""

    construct_id: str
    pin: ChartPin
    version: str
    release: str
    values: dict[str, Any]
    # The device plugin pods' scheduling terms as the cluster will see them (for the chart, its
    # defaults merged with our values the way Helm merges them); None if it runs no plugin.
    device_plugin_pod: dict[str, Any] | None


def gpu_software_chart(
    pool: PoolSettings,
    software: str,
    sharing: SharingPlan | None = None,
    *,
    metrics: GpuMetricsChoice = "none",
    compute_domains: bool = False,
) -> GpuSoftwareChart | None:
    """The chart for the pool's resolved GPU software (`resolved_gpu_software`): the device
    plugin or the GPU Operator, with the pool's sharing config, the cluster's `metrics.gpu` and
    whether the pool runs ComputeDomains; None for `none`, where the AMI ships the plugin."""
    if software == "device-plugin":
        values = device_plugin_values({POOL_LABEL: pool.name}, pool.taints, sharing, efa=pool.efa)
        return GpuSoftwareChart(
            construct_id="DevicePlugin",
            pin=NVIDIA_DEVICE_PLUGIN,
            version=pool.versions.device_plugin or NVIDIA_DEVICE_PLUGIN.version,
            release=f"nvidia-device-plugin-{pool.name}",
            values=values,
            device_plugin_pod=deep_merge(DEVICE_PLUGIN_CHART_DEFAULTS, values),
        )
    if software == "gpu-operator":
        values = gpu_operator_values(
            pool, sharing, metrics=metrics, compute_domains=compute_domains
        )
        return GpuSoftwareChart(
            construct_id="GpuOperator",
            pin=NVIDIA_GPU_OPERATOR,
            version=pool.versions.gpu_operator or NVIDIA_GPU_OPERATOR.version,
            # Cluster-wide and installed once (checks/between_pools.py): no pool name needed.
            release="gpu-operator",
            values=values,
            device_plugin_pod=_operator_device_plugin_pod(values),
        )
    return None


def _operator_device_plugin_pod(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where the operator runs its device plugin: on every NVIDIA node (node feature discovery
    finds the GPU; our nodes say so with nvidia.com/gpu.present) that has not opted out with
    nvidia.com/gpu.deploy.operands=false, tolerating `daemonsets.tolerations`."""
    if not values["devicePlugin"]["enabled"]:
        return None
    expressions = [
        {"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]},
        {"key": OPERANDS_LABEL, "operator": "NotIn", "values": ["false"]},
    ]
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        },
        "tolerations": values["daemonsets"]["tolerations"],
    }


def efa_device_plugin_chart(pool: PoolSettings) -> GpuSoftwareChart | None:
    """The EFA device plugin of an EFA pool on it (`efa_software: device-plugin`, the default;
    None otherwise): its own release, on the pool's nodes only, tolerating the pool's taints, so
    each EFA node runs exactly one."""
    if not pool.efa or pool.efa_software != "device-plugin":
        return None
    tolerations = [t.any_value_toleration() for t in pool.taints]
    values = {"nodeSelector": {POOL_LABEL: pool.name}, "tolerations": tolerations}
    return GpuSoftwareChart(
        construct_id="EfaDevicePlugin",
        pin=EFA_DEVICE_PLUGIN,
        version=EFA_DEVICE_PLUGIN.version,
        release=f"aws-efa-k8s-device-plugin-{pool.name}",
        values=values,
        # The chart's template adds CriticalAddonsOnly before the values' tolerations
        # (templates/daemonset.yaml); its instance-type affinity admits every catalog EFA type.
        device_plugin_pod={
            "nodeSelector": values["nodeSelector"],
            "tolerations": [_CRITICAL_ADDONS_TOLERATION, *tolerations],
        },
    )
