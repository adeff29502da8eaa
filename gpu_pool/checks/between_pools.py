"""The rules between the pools of one cluster: unique names, one GPU Operator, exactly one
GPU advertiser (a device plugin or the DRA driver) per GPU node, pools a workload cannot tell
apart, and pods that two provisioners would both launch a node for."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.labels import POOL_LABEL
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.dra import DRA_DRIVER, dra_driver_chart, driver_pools
from gpu_pool.plan.gpu_software import GpuSoftwareChart
from gpu_pool.plan.pool import PoolPlan


def check_pool_among(plan: PoolPlan, others: Sequence[PoolPlan]) -> list[Finding]:
    """The rules between a pool and the pools already on its cluster (`others`)."""
    if any(other.name == plan.name for other in others):
        # One problem, one line: the rules below would only restate it (both pools' plugins
        # select both pools' nodes).
        return [
            error(
                "GP-PAIR-01",
                f"{plan.setting}.name",
                f"another pool on this cluster is already named '{plan.name}'; the name "
                "labels the pool's nodes and names its device plugin release, so it must be "
                "unique per cluster: rename one",
            )
        ]
    findings: list[Finding] = []
    for other in others:
        if plan.gpu_software == other.gpu_software == "gpu-operator":
            findings.append(
                error(
                    "GP-PAIR-02",
                    f"{plan.setting}.gpu_software",
                    f"'gpu-operator', but pool '{other.name}' already installs the GPU "
                    "Operator, which is cluster-wide and installed once: use 'device-plugin' "
                    f"for pool '{plan.name}'",
                )
            )
        findings += _same_labels(plan, other)
        findings += _pending_to_two_provisioners(plan, other)
    findings += check_one_device_plugin_per_node([*others, plan], plan)
    return findings


def check_one_device_plugin_per_node(plans: Sequence[PoolPlan], new: PoolPlan) -> Iterator[Finding]:
    """Every GPU node runs exactly one GPU advertiser: its AMI's device plugin (Bottlerocket),
    its pool's device plugin, or the cluster's NVIDIA DRA driver kubelet plugin (plan/dra.py).
    A device plugin beside the DRA driver hands the node's GPUs out twice (EKS user guide, "Use
    the NVIDIA DRA driver or device plugin on Amazon EKS": silent oversubscription).

    The scheduling model is applied to each advertiser's rendered pod terms: the advertiser of
    `new` must reach each of its node groups, and no pool's advertiser may reach another pool's
    nodes (checked both ways between `new` and the rest). The DRA pools share one release, as
    the GPU Operator pools would: those pairs are one advertiser. A pool whose GPU software does
    not fit its AMI, and a second GPU Operator, are other rules' findings, not this one's.
    """
    dra = dra_driver_chart(plans)
    new_advertiser = _advertiser(new, dra)
    for plan in plans:
        for shape in plan.node_shapes:
            nodes = f"{shape.description} of pool '{plan.name}'"
            taints = plan.node_taints()
            if plan is new:
                if new_advertiser is not None and not pod_fits_node(
                    new_advertiser.pod, shape.labels, taints
                ):
                    yield error(
                        "GP-PAIR-03",
                        shape.setting,
                        f"{new_advertiser.name} would not run on {nodes} (labels "
                        f"{dict(shape.labels)}); they would {new_advertiser.missing}",
                    )
                others = [p for p in plans if p is not new]
            else:
                others = [new]
            for other in others:
                if plan.gpu_software == other.gpu_software in _ONE_RELEASE:
                    continue
                advertiser = _advertiser(other, dra)
                if advertiser is not None and pod_fits_node(advertiser.pod, shape.labels, taints):
                    dra_involved = DRA_DRIVER in (plan.gpu_software, other.gpu_software)
                    yield error(
                        "GP-PAIR-04",
                        new.setting,
                        f"{nodes} would also run {advertiser.name} of pool '{other.name}'; "
                        f"{_DRA_BESIDE_PLUGIN if dra_involved else _TWO_PLUGINS}",
                    )


# GPU software installed once per cluster, whose pools share one advertiser.
_ONE_RELEASE = ("gpu-operator", DRA_DRIVER)
_TWO_PLUGINS = "two plugins on one node fight over its GPUs: pool names must be unique per cluster"
_DRA_BESIDE_PLUGIN = (
    "a device plugin beside the DRA driver hands the node's GPUs out twice: a node must run "
    "exactly one of them"
)


@dataclass(frozen=True)
class _Advertiser:
    """What makes a pool's GPUs allocatable, as the rule names it: its pods' scheduling terms,
    and what the pool's nodes lack where it does not run."""

    pod: dict[str, Any]
    name: str
    missing: str


def _advertiser(plan: PoolPlan, dra: GpuSoftwareChart | None) -> _Advertiser | None:
    if plan.gpu_software == DRA_DRIVER:
        # An Auto Mode pool's nodes run their own driver (plan/dra.py driver_pools).
        if not driver_pools([plan]) or dra is None or dra.device_plugin_pod is None:
            return None
        return _Advertiser(
            dra.device_plugin_pod,
            "the NVIDIA DRA driver's kubelet plugin",
            "publish no ResourceSlice and GPU claims would stay unallocated",
        )
    if plan.chart is None or plan.chart.device_plugin_pod is None:
        return None
    return _Advertiser(
        plan.chart.device_plugin_pod,
        "the device plugin",
        "advertise no nvidia.com/gpu and GPU pods would stay Pending",
    )


def _same_labels(plan: PoolPlan, other: PoolPlan) -> Iterator[Finding]:
    """Pools a workload's labels cannot tell apart."""
    if plan.settings.labels != other.settings.labels:
        return
    arches = _architectures(plan)
    other_arches = _architectures(other)
    if arches != other_arches:
        yield warning(
            "GP-PAIR-05",
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
            "GP-PAIR-06",
            f"{plan.setting}.labels",
            f"pool '{plan.name}' has the same labels and taints as pool '{other.name}'; a pod "
            f"that selects these labels may land on either: select {POOL_LABEL}: {plan.name}, "
            "or give the pools distinct labels",
        )


def _architectures(plan: PoolPlan) -> list[str]:
    return sorted({shape.architecture.value for shape in plan.node_shapes})


def _pending_to_two_provisioners(plan: PoolPlan, other: PoolPlan) -> Iterator[Finding]:
    """A GPU pod that tolerates one pool's taints and selects no pool, if it also fits a pool of
    another provisioner, is pending to both: Cluster Autoscaler scales up any node group whose
    template fits a pending pod (kubernetes/autoscaler cluster-autoscaler FAQ, "How does
    scale-up work?") and Karpenter provisions for every pending pod its NodePools can take
    (karpenter.sh docs, concepts/scheduling), neither knowing of the other: each launches a
    node, and one stays empty until scaled down.

    A warning, not an error: pods that select their pool (`gpu-pool.io/pool`) are not affected,
    and distinct taints per provisioner are the user's choice (docs/provisioners.md)."""
    if plan.provisioner == other.provisioner:
        return
    for tolerating, fitting in ((plan, other), (other, plan)):
        pod = {"tolerations": tolerating.workload_tolerations}
        shape = next(
            (s for s in fitting.node_shapes if pod_fits_node(pod, s.labels, fitting.node_taints())),
            None,
        )
        if shape is not None:
            yield warning(
                "GP-PAIR-07",
                f"{plan.setting}.taints",
                f"a GPU pod that tolerates pool '{tolerating.name}' ({tolerating.provisioner}) "
                f"and selects no pool also fits pool '{fitting.name}' ({fitting.provisioner}): "
                "both would launch a node for it and one would idle until scaled down; select "
                f"{POOL_LABEL} in such pods, or give the pools of each provisioner a taint of "
                "their own",
            )
            return
