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
            f"'{mode}' with gpu_software: dra-driver: static time-slicing, MPS and MIG are "
            "device plugin features; the DRA driver's own time-slicing and dynamic MIG are "
            "alpha (feature gates TimeSlicingSettings and DynamicMIG, off by default) and "
            "gpu-pool does not turn them on: set mode: none, or use gpu_software: device-plugin",
        )


def check_dra_target(plan: PoolPlan, kubernetes_minor: str | None) -> Iterator[Finding]:
    """A DRA pool against its cluster's Kubernetes minor (None: unknown)."""
    if plan.gpu_software != DRA_DRIVER or kubernetes_minor is None:
        return
    major, _, minor = kubernetes_minor.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        return  # not a version: the app's own rule names it (GP-APP-01)
    if (int(major), int(minor)) < DRA_MIN_KUBERNETES:
        yield error(
            "GP-DRA-01",
            f"{plan.setting}.gpu_software",
            f"'dra-driver' on Kubernetes {kubernetes_minor}: the NVIDIA DRA driver needs "
            "resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the driver on "
            "1.34 or later): set cluster.kubernetes_version to 1.34 or later, or use "
            "gpu_software: device-plugin",
        )
