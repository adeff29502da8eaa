"""What makes a GPU node advertise `nvidia.com/gpu`: the device plugin or the GPU Operator.

The AL2023 NVIDIA AMI carries driver and container toolkit but not the device plugin; the
Bottlerocket NVIDIA AMI ships the plugin itself (../shared/FACTS.md).

Device plugin values: the chart's default affinity requires one of three labels EKS nodes on
<= 1.34 do not carry; the pool labels its nodes `nvidia.com/gpu.present=true`, which satisfies
it on every version. A nodeSelector on the pool's labels keeps the DaemonSet off CPU nodes (where
it crash-loops, eksctl#8858) and off other pools; one toleration per pool taint lets it in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.settings import PoolSettings, Taint
from gpu_pool.versions import NVIDIA_DEVICE_PLUGIN, NVIDIA_GPU_OPERATOR

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


def resolved_gpu_software(pool: PoolSettings) -> str:
    """`gpu_software`, or its default: the device plugin on AL2023, nothing on Bottlerocket."""
    if pool.gpu_software is not None:
        return pool.gpu_software
    return "none" if is_bottlerocket(pool) else "device-plugin"


def is_bottlerocket(pool: PoolSettings) -> bool:
    """Whether the pool's AMI (explicit type, else family) is Bottlerocket."""
    ami = pool.ami_type or pool.ami_family
    return ami.startswith("BOTTLEROCKET")


def taint_tolerations(taints: Sequence[Taint]) -> list[dict[str, str]]:
    """One toleration per taint: its key and effect, any value."""
    return [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in taints]


def device_plugin_values(
    selector_labels: Mapping[str, str], taints: Sequence[Taint]
) -> dict[str, Any]:
    return {
        "nodeSelector": dict(selector_labels),
        "tolerations": [_CRITICAL_ADDONS_TOLERATION, *taint_tolerations(taints)],
    }


def gpu_operator_values(pool: PoolSettings) -> dict[str, Any]:
    """Operator with the AMI's own driver and toolkit (and, on Bottlerocket, device plugin)."""
    tolerations = taint_tolerations(pool.taints)
    return {
        "driver": {"enabled": pool.gpu_operator.driver_enabled},
        "toolkit": {"enabled": pool.gpu_operator.toolkit_enabled},
        "devicePlugin": {"enabled": not is_bottlerocket(pool)},
        # Operands and the NFD worker that labels GPU nodes must reach the tainted pool.
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": tolerations}},
    }


def install_gpu_software(
    scope: Construct, cluster: eks.ICluster, pool: PoolSettings
) -> eks.HelmChart | None:
    """Install the pool's GPU software chart, if it needs one."""
    software = resolved_gpu_software(pool)
    if software == "device-plugin":
        pin, version, construct_id = (
            NVIDIA_DEVICE_PLUGIN,
            pool.versions.device_plugin,
            "DevicePlugin",
        )
        release = f"nvidia-device-plugin-{pool.name}"
        values = device_plugin_values(pool.labels, pool.taints)
    elif software == "gpu-operator":
        pin, version, construct_id = NVIDIA_GPU_OPERATOR, pool.versions.gpu_operator, "GpuOperator"
        release = "gpu-operator"
        values = gpu_operator_values(pool)
    else:
        return None
    return eks.HelmChart(
        scope,
        construct_id,
        cluster=cluster,
        chart=pin.chart,
        repository=pin.repository,
        version=version or pin.version,
        namespace=pin.namespace,
        release=release,
        values=values,
    )
