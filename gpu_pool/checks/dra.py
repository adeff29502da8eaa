"""The rules about a pool whose GPUs the NVIDIA DRA driver advertises (`gpu_software:
dra-driver`, plan/dra.py): where EKS documents the driver as unsupported, or where it cannot
work beside what gpu-pool builds. The EKS user guide's page is "Use the NVIDIA DRA driver or
device plugin on Amazon EKS" (ml/device-management-nvidia-dra-device-plugin.adoc); its table
lists Kubernetes 1.34 or later, Karpenter static capacity, managed node groups and self-managed
nodes, and the AL2023 NVIDIA and Bottlerocket AMIs.

Scaling rules (min_size, scale from zero) and UltraServer rules are GP-DRA-10 and later and
GP-ULTRA-* (checks of their own modules).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error
from gpu_pool.model.versions import minor_key
from gpu_pool.plan.dra import DRA_DRIVER
from gpu_pool.plan.gpu_software import is_bottlerocket
from gpu_pool.plan.pool import PoolPlan

# DRA's resource.k8s.io/v1 API is GA from Kubernetes 1.34, and EKS's guide requires it.
DRA_MIN_KUBERNETES = (1, 34)


def check_dra_pool(plan: PoolPlan) -> Iterator[Finding]:
    """A DRA pool's settings on their own (nothing for other pools)."""
    if plan.gpu_software != DRA_DRIVER:
        return
    setting = f"{plan.setting}.gpu_software"
    if plan.provisioner == "auto-mode":
        yield error(
            "GP-DRA-02",
            setting,
            "'dra-driver' with provisioner: auto-mode: EKS does not support installing the "
            "NVIDIA DRA driver on Auto Mode nodes, which run their own GPU software: remove "
            "gpu_software (Auto Mode's device plugin), or use provisioner: cluster-autoscaler",
        )
        return
    if plan.provisioner == "karpenter":
        yield error(
            "GP-DRA-05",
            setting,
            "'dra-driver' with provisioner: karpenter: EKS documents the DRA driver with "
            "Karpenter before 1.15 for static capacity only (a NodePool with spec.replicas, "
            "alpha), and gpu-pool's Karpenter pools are NodePools that launch nodes for "
            "pending pods (dynamic capacity): use provisioner: cluster-autoscaler, or "
            "gpu_software: device-plugin",
        )
    if is_bottlerocket(plan.settings):
        yield error(
            "GP-DRA-03",
            setting,
            "'dra-driver' on Bottlerocket: its NVIDIA AMI runs the NVIDIA device plugin, and the "
            "DRA driver must not share a node with it; turning it off takes "
            "settings.kubelet-device-plugins.nvidia.enabled = false in the node's user data "
            "(Bottlerocket 1.63.0 or later), which gpu-pool does not write: use ami_family: "
            "AL2023",
        )
    mode = plan.settings.sharing.mode
    if mode != "none":
        yield error(
            "GP-DRA-04",
            f"{plan.setting}.sharing.mode",
            f"'{mode}' with gpu_software: dra-driver: {_SHARING_REFUSED[mode]}",
        )


# Why each sharing mode gpu-pool builds cannot go with the DRA driver (k8s-dra-driver-gpu
# v25.12.0): its own time-slicing (TimeSlicingSettings) and MIG partitioning (DynamicMIG) are
# alpha feature gates, off by default (pkg/featuregates/featuregates.go), and gpu-pool turns
# none on. MIG devices created beforehand it does advertise (DeviceClass mig.nvidia.com,
# templates/deviceclass-mig.yaml), but gpu-pool's MIG layouts are applied by the GPU Operator's
# MIG manager (plan/sharing.py), which a DRA node does not run.
_SHARING_REFUSED = {
    "time-slicing": (
        "gpu-pool's time-slicing is the device plugin's (shares advertised as nvidia.com/gpu); "
        "the DRA driver time-slices a GPU only through its TimeSlicingSettings feature gate, "
        "alpha and off by default (k8s-dra-driver-gpu v25.12.0 pkg/featuregates), which "
        "gpu-pool does not turn on: set mode: none, or use gpu_software: device-plugin"
    ),
    "mig": (
        "the DRA driver advertises MIG devices that already exist (DeviceClass mig.nvidia.com), "
        "but gpu-pool partitions a pool's GPUs with the GPU Operator's MIG manager "
        "(nvidia.com/mig.config), which does not run on DRA nodes, and the driver's own "
        "partitioning (feature gate DynamicMIG) is alpha and off by default: set mode: none, or "
        "use gpu_software: gpu-operator"
    ),
}


def check_dra_target(plan: PoolPlan, kubernetes_minor: str | None) -> Iterator[Finding]:
    """A DRA pool against its cluster's Kubernetes minor (None: unknown)."""
    if plan.gpu_software != DRA_DRIVER or kubernetes_minor is None:
        return
    key = minor_key(kubernetes_minor)
    if key is not None and key < DRA_MIN_KUBERNETES:
        yield error(
            "GP-DRA-01",
            f"{plan.setting}.gpu_software",
            f"'dra-driver' on Kubernetes {kubernetes_minor}: the NVIDIA DRA driver needs "
            "resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the driver on "
            "1.34 or later): set cluster.kubernetes_version to 1.34 or later, or use "
            "gpu_software: device-plugin",
        )
