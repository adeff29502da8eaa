"""The rules about a pool whose EFA interfaces the EFA DRA driver advertises (`efa_software:
dra-driver`, plan/efa_dra.py): what it needs, and exactly one EFA advertiser per EFA node. The
EKS user guide's page is "Manage EFA devices on Amazon EKS" (device-management-efa): the driver
(DRANET, chart aws-dranet) on Kubernetes 1.34 or later, and never beside the EFA device plugin
on one node."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gpu_pool.checks.dra import DRA_MIN_KUBERNETES
from gpu_pool.checks.dra_scaling import AWS_TEMPLATE_NODE_SOURCE
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.model.versions import minor_key
from gpu_pool.plan.dra import DRA_DRIVER
from gpu_pool.plan.efa_dra import EFA_DRA_DRIVER, efa_dra_chart, efa_dra_pools
from gpu_pool.plan.pool import PoolPlan


def check_efa_dra_pool(plan: PoolPlan) -> Iterator[Finding]:
    """An EFA DRA pool's settings on their own (nothing for other pools)."""
    settings = plan.settings
    if settings.efa_software != EFA_DRA_DRIVER:
        return
    setting = f"{plan.setting}.efa_software"
    if not settings.efa:
        yield error(
            "GP-EFA-01",
            setting,
            "'dra-driver' without efa: true: the pool's nodes get no EFA interface for the "
            "driver to advertise: set efa: true, or remove efa_software",
        )
    elif plan.provisioner == "karpenter" and plan.gpu_software != DRA_DRIVER:
        yield error(
            "GP-EFA-02",
            setting,
            "'dra-driver' with provisioner: karpenter and no gpu_software: dra-driver: "
            "Karpenter launches a node for a pod's EFA claims (its draEFA gate) only with "
            "settings.enableDRA, which gpu-pool turns on for Karpenter pools with "
            'gpu_software: dra-driver (karpenter.sh "Utilizing GPUs and EFAs with Dynamic '
            'Resource Allocation"): set gpu_software: dra-driver too, or use efa_software: '
            "device-plugin",
        )


def check_efa_dra_scaling(plan: PoolPlan) -> Iterator[Finding]:
    """A node-group EFA DRA pool against what Cluster Autoscaler can scale: like a GPU claim
    (GP-DRA-10, checks/dra_scaling.py), an EFA claim fits no empty group, whose template node
    has no ResourceSlices (AWS_TEMPLATE_NODE_SOURCE). A DRA GPU pool is GP-DRA-10's already, and
    a Capacity Block pool stays at 0 until its block starts (GP-DRA-11's static capacity)."""
    if (
        not efa_dra_pools([plan])
        or plan.provisioner != "cluster-autoscaler"
        or plan.gpu_software == DRA_DRIVER
        or plan.capacity.capacity_block
        or plan.settings.min_size > 0
    ):
        return
    yield error(
        "GP-EFA-06",
        f"{plan.setting}.min_size",
        "0 with efa_software dra-driver: Cluster Autoscaler builds an empty node group's template "
        f"node without ResourceSlices ({AWS_TEMPLATE_NODE_SOURCE}), so a pod's EFA claim fits "
        "no empty group and the group never gets its first node: set min_size (and "
        "desired_size) 1 or more, or use efa_software: device-plugin",
    )


# The pinned aws-dranet chart (1.0.0, driver image v1.2.0-eksbuild.2) says "Kubernetes 1.35+" in
# its README's prerequisites, where EKS's guide (device-management-efa) supports the driver on
# 1.34. What the driver uses of the DRA API is 1.34's resource.k8s.io/v1: its ResourceSlice
# devices' attributes and capacity (the resource.kubernetes.io/pcieRoot attribute among them)
# and a claim's status.devices[].networkData (kubernetes-sigs/dranet v1.2.0 pkg/inventory/db.go,
# pkg/driver/nri_hooks.go, built against k8s.io/api v0.35.3). So 1.34 is the floor
# (GP-EFA-03), and 1.34 itself warns that the chart's own documentation does not cover it.
CHART_README_MIN_KUBERNETES = (1, 35)


def check_efa_dra_target(plan: PoolPlan, kubernetes_minor: str | None) -> Iterator[Finding]:
    """An EFA DRA pool against its cluster's Kubernetes minor (None: unknown)."""
    if plan.settings.efa_software != EFA_DRA_DRIVER or kubernetes_minor is None:
        return
    key = minor_key(kubernetes_minor)
    if key is not None and DRA_MIN_KUBERNETES <= key < CHART_README_MIN_KUBERNETES:
        yield warning(
            "GP-EFA-07",
            f"{plan.setting}.efa_software",
            f"'dra-driver' on Kubernetes {kubernetes_minor}: EKS's guide (\"Manage EFA devices "
            'on Amazon EKS") supports the EFA DRA driver on 1.34, but the pinned aws-dranet '
            "chart's README asks for 1.35 or later; what the driver uses (resource.k8s.io/v1 "
            "device attributes and capacity, a claim's network data) 1.34 serves, but the "
            "chart is not documented there: prefer cluster.kubernetes_version 1.35 or later",
        )
    if key is not None and key < DRA_MIN_KUBERNETES:
        yield error(
            "GP-EFA-03",
            f"{plan.setting}.efa_software",
            f"'dra-driver' on Kubernetes {kubernetes_minor}: the EFA DRA driver needs "
            "resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the driver on "
            "1.34 or later): set cluster.kubernetes_version to 1.34 or later, or use "
            "efa_software: device-plugin",
        )


def check_one_efa_advertiser_per_node(
    plans: Sequence[PoolPlan], new: PoolPlan
) -> Iterator[Finding]:
    """Every EFA node runs exactly one EFA advertiser: its pool's EFA device plugin, or the
    cluster's EFA DRA driver (EKS UG "Manage EFA devices on Amazon EKS": never both on one
    node). As GP-PAIR-03/04 do for GPUs, each advertiser's rendered pod terms are applied to the
    nodes: the driver must reach each node of `new` when `new` is an EFA DRA pool, and no
    advertiser may reach a node of a pool it does not serve (checked between `new` and the
    rest, both ways)."""
    driver = efa_dra_chart(plans)
    driver_pod = driver.device_plugin_pod if driver is not None else None
    new_runs_driver = bool(efa_dra_pools([new]))
    for plan in plans:
        for shape in plan.node_shapes:
            nodes = f"{shape.description} of pool '{plan.name}'"
            taints = plan.node_taints()
            runs_driver = driver_pod is not None and pod_fits_node(driver_pod, shape.labels, taints)
            if plan is new and new_runs_driver and not runs_driver:
                yield error(
                    "GP-EFA-04",
                    shape.setting,
                    f"the EFA DRA driver would not run on {nodes} (labels "
                    f"{dict(shape.labels)}); they would publish no dra.net ResourceSlice and "
                    "EFA claims would stay unallocated",
                )
            if not runs_driver:
                continue
            for other in plans:
                plugin = other.efa_chart
                if new not in (plan, other) or plugin is None or plugin.device_plugin_pod is None:
                    continue
                if pod_fits_node(plugin.device_plugin_pod, shape.labels, taints):
                    yield error(
                        "GP-EFA-05",
                        new.setting,
                        f"{nodes} would run both the EFA DRA driver and the EFA device plugin "
                        f"of pool '{other.name}'; EKS forbids the two on one node (\"Manage "
                        'EFA devices on Amazon EKS"): a node must run exactly one of them',
                    )
