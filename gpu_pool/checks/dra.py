"""The rules about a pool whose GPUs the NVIDIA DRA driver advertises (`gpu_software:
dra-driver`, plan/dra.py): where EKS documents the driver as unsupported, or where it cannot
work beside what gpu-pool builds. The EKS user guide's page is "Use the NVIDIA DRA driver or
device plugin on Amazon EKS" (ml/device-management-nvidia-dra-device-plugin.adoc); its table
lists Kubernetes 1.34 or later, managed node groups and self-managed nodes, and the AL2023
NVIDIA and Bottlerocket AMIs, and EKS Auto Mode from Kubernetes 1.36, whose nodes run the
driver themselves; "Manage hardware devices on Amazon EKS" adds Karpenter, whose
dynamic provisioning for DRA claims came in 1.15 behind its feature gates (settings.enableDRA,
karpenter.sh "Utilizing GPUs and EFAs with Dynamic Resource Allocation"): only on the
instance types its release has DRA device metadata for.

Scaling rules (min_size, scale from zero) and UltraServer rules are GP-DRA-10 and later and
GP-ULTRA-* (checks of their own modules).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error
from gpu_pool.model.karpenter_api import KARPENTER_DRA_INSTANCE_TYPES
from gpu_pool.model.versions import (
    EXACT_VERSION,
    KARPENTER,
    KARPENTER_DRA_SINCE,
    minor_key,
    version_key,
)
from gpu_pool.plan.dra import DRA_DRIVER
from gpu_pool.plan.gpu_software import is_bottlerocket
from gpu_pool.plan.pool import PoolPlan

# DRA's resource.k8s.io/v1 API is GA from Kubernetes 1.34, and EKS's guide requires it (so
# does Karpenter's DRA support: karpenter.sh "Utilizing GPUs and EFAs with Dynamic Resource
# Allocation", "DRA requires Kubernetes 1.34 or later").
DRA_MIN_KUBERNETES = (1, 34)

# EKS Auto Mode ships the NVIDIA DRA driver and the EFA DRA driver (DRANET) in its node runtime
# from Kubernetes 1.36; there is nothing to install, and Auto Mode keeps a DRA driver and a
# device plugin from managing the same device type on one node (EKS UG "Manage hardware devices
# on Amazon EKS", "Use the NVIDIA DRA driver or device plugin on Amazon EKS"). Below 1.36 its
# nodes run only the device plugin.
AUTO_MODE_DRA_MIN_KUBERNETES = (1, 36)


def check_dra_pool(plan: PoolPlan) -> Iterator[Finding]:
    """A DRA pool's settings on their own (nothing for other pools)."""
    if plan.gpu_software != DRA_DRIVER:
        return
    setting = f"{plan.setting}.gpu_software"
    if plan.provisioner == "karpenter":
        yield from _karpenter_types(plan)
    # Auto Mode chooses its nodes' AMIs itself (ami_family is GP-AUTO-0x's).
    if plan.provisioner != "auto-mode" and is_bottlerocket(plan.settings):
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


# Why each sharing mode gpu-pool builds cannot go with the DRA driver (dra-driver-nvidia-gpu
# v0.4.1): its own time-slicing (TimeSlicingSettings) and MIG partitioning (DynamicMIG) are
# alpha feature gates, off by default (pkg/featuregates/featuregates.go), and gpu-pool turns
# none on. MIG devices created beforehand it does advertise (DeviceClass mig.nvidia.com,
# templates/deviceclass-mig.yaml), but gpu-pool's MIG layouts are applied by the GPU Operator's
# MIG manager (plan/sharing.py), which a DRA node does not run.
_SHARING_REFUSED = {
    "time-slicing": (
        "gpu-pool's time-slicing is the device plugin's (shares advertised as nvidia.com/gpu); "
        "the DRA driver time-slices a GPU only through its TimeSlicingSettings feature gate, "
        "alpha and off by default (dra-driver-nvidia-gpu v0.4.1 pkg/featuregates), which "
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
    """A pool that runs the DRA driver (for its GPUs, or its ComputeDomains) against its
    cluster's Kubernetes minor (None: unknown)."""
    gpus = plan.gpu_software == DRA_DRIVER
    if not (gpus or plan.compute_domains) or kubernetes_minor is None:
        return
    key = minor_key(kubernetes_minor)
    if key is None:
        return
    if gpus and plan.provisioner == "auto-mode":
        if key < AUTO_MODE_DRA_MIN_KUBERNETES:
            yield error(
                "GP-DRA-02",
                f"{plan.setting}.gpu_software",
                f"'dra-driver' with provisioner: auto-mode on Kubernetes {kubernetes_minor}: "
                "Auto Mode nodes run the NVIDIA DRA driver (in their node runtime, nothing to "
                "install) from Kubernetes 1.36: set cluster.kubernetes_version to 1.36 or "
                "later, or remove gpu_software (Auto Mode's device plugin)",
            )
    elif key < DRA_MIN_KUBERNETES:
        yield error(
            "GP-DRA-01",
            f"{plan.setting}.{'gpu_software' if gpus else 'compute_domains'}",
            f"'dra-driver' on Kubernetes {kubernetes_minor}: the NVIDIA DRA driver needs "
            "resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the driver on "
            "1.34 or later): set cluster.kubernetes_version to 1.34 or later"
            + (", or use gpu_software: device-plugin" if gpus else ""),
        )


def _karpenter_types(plan: PoolPlan) -> Iterator[Finding]:
    """A Karpenter DRA pool's types that Karpenter cannot size a GPU claim for: it launches a
    node for a pending pod's claims only on types with built-in DRA device metadata
    (model/karpenter_api.KARPENTER_DRA_INSTANCE_TYPES), so a pod that only such a type could
    serve would stay Pending."""
    types = [t for group in plan.entries for t in group]
    for index, gpu_type in enumerate(types):
        if gpu_type.name not in KARPENTER_DRA_INSTANCE_TYPES:
            yield error(
                "GP-DRA-06",
                f"{plan.setting}.instance_types[{index}]",
                f"'{gpu_type.name}' with gpu_software: dra-driver and provisioner: karpenter: "
                f"Karpenter {KARPENTER.version} has no DRA device metadata for it "
                "(pkg/providers/drametadata; a new type needs a new Karpenter release), so it "
                "never launches one for a pod's GPU claim: use a type it describes (g4dn, g5, "
                "g5g, g6, g6e, g6f, gr6, gr6f, p3dn, p4d, p4de, p5, p5e, p5en, p6-b200, "
                "p6-b300), or provisioner: cluster-autoscaler",
            )


def check_karpenter_dra_version(plan: PoolPlan, chart_version: str | None) -> Iterator[Finding]:
    """A Karpenter DRA pool against the Karpenter that runs it: before 1.15.0 Karpenter ignores
    a pod's ResourceClaims when it sizes nodes, so a DRA pool would never scale from zero."""
    version = chart_version or KARPENTER.version
    if (
        plan.gpu_software != DRA_DRIVER
        or plan.provisioner != "karpenter"
        or not EXACT_VERSION.match(version)
    ):
        return
    if version_key(version) < version_key(KARPENTER_DRA_SINCE):
        yield error(
            "GP-DRA-07",
            "karpenter.chart_version",
            f"{version} with pool '{plan.name}' on gpu_software: dra-driver: Karpenter before "
            f"{KARPENTER_DRA_SINCE} ignores a pod's ResourceClaims when it launches nodes "
            f"(settings.enableDRA came in {KARPENTER_DRA_SINCE}), so the pool would never "
            f"scale from zero: set karpenter.chart_version to {KARPENTER_DRA_SINCE} or newer "
            f"(the pin is {KARPENTER.version}), or leave it unset",
        )
