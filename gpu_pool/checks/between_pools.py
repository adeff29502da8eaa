"""The rules between the pools of one cluster: unique names, one GPU Operator, exactly one
device plugin per GPU node, and pools a workload cannot tell apart."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.labels import POOL_LABEL
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.pool import PoolPlan


def check_pool_among(plan: PoolPlan, others: Sequence[PoolPlan]) -> list[Finding]:
    """The rules between a pool and the pools already on its cluster (`others`)."""
    findings: list[Finding] = []
    for other in others:
        if other.name == plan.name:
            findings.append(
                error(
                    f"{plan.setting}.name",
                    f"another pool on this cluster is already named '{plan.name}'; the name "
                    "labels the pool's nodes and names its device plugin release, so it must be "
                    "unique per cluster: rename one",
                )
            )
        if plan.gpu_software == other.gpu_software == "gpu-operator":
            findings.append(
                error(
                    f"{plan.setting}.gpu_software",
                    f"'gpu-operator', but pool '{other.name}' already installs the GPU "
                    "Operator, which is cluster-wide and installed once: use 'device-plugin' "
                    f"for pool '{plan.name}'",
                )
            )
        findings += _same_labels(plan, other)
    findings += check_one_device_plugin_per_node([*others, plan], plan)
    return findings


def check_one_device_plugin_per_node(plans: Sequence[PoolPlan], new: PoolPlan) -> Iterator[Finding]:
    """Every GPU node runs exactly one device plugin: its AMI's (Bottlerocket) or its pool's.

    The scheduling model is applied to each plugin's rendered pod terms: the plugin of `new`
    must reach each of its node groups, and no pool's plugin may reach another pool's nodes
    (checked both ways between `new` and the rest). A pool whose GPU software does not fit its
    AMI, and a second GPU Operator, are other rules' findings, not this one's.
    """
    new_plugin = _plugin_pod(new)
    for plan in plans:
        for shape in plan.node_shapes:
            nodes = f"{shape.description} of pool '{plan.name}'"
            taints = plan.node_taints()
            if plan is new:
                if new_plugin is not None and not pod_fits_node(new_plugin, shape.labels, taints):
                    yield error(
                        shape.setting,
                        f"the device plugin would not run on {nodes} (labels "
                        f"{dict(shape.labels)}); they would advertise no nvidia.com/gpu and GPU "
                        "pods would stay Pending",
                    )
                others = [p for p in plans if p is not new]
            else:
                others = [new]
            for other in others:
                if plan.gpu_software == other.gpu_software == "gpu-operator":
                    continue
                plugin = _plugin_pod(other)
                if plugin is not None and pod_fits_node(plugin, shape.labels, taints):
                    yield error(
                        new.setting,
                        f"{nodes} would also run the device plugin of pool '{other.name}'; two "
                        "plugins on one node fight over its GPUs: pool names must be unique per "
                        "cluster",
                    )


def _plugin_pod(plan: PoolPlan) -> dict[str, Any] | None:
    return plan.chart.device_plugin_pod if plan.chart is not None else None


def _same_labels(plan: PoolPlan, other: PoolPlan) -> Iterator[Finding]:
    """Pools a workload's labels cannot tell apart."""
    if plan.settings.labels != other.settings.labels:
        return
    arches = _architectures(plan)
    other_arches = _architectures(other)
    if arches != other_arches:
        yield warning(
            f"{plan.setting}.labels",
            f"pool '{plan.name}' has the same labels as pool '{other.name}' but runs "
            f"{'/'.join(arches)} nodes where it runs {'/'.join(other_arches)}; a pod without a "
            "kubernetes.io/arch selector may land on either: give the pools distinct labels, "
            "or select kubernetes.io/arch in the pod",
        )
    elif (
        set(plan.taints) == set(other.taints) and plan.capacity.reserved == other.capacity.reserved
    ):
        # A reserved pool and an on-demand one with the same labels are a reservation and its
        # fallback: landing on either is the point (the expander tries the reserved first).
        yield warning(
            f"{plan.setting}.labels",
            f"pool '{plan.name}' has the same labels and taints as pool '{other.name}'; a pod "
            f"that selects these labels may land on either: select {POOL_LABEL}: {plan.name}, "
            "or give the pools distinct labels",
        )


def _architectures(plan: PoolPlan) -> list[str]:
    return sorted({shape.architecture.value for shape in plan.node_shapes})
