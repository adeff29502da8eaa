"""What a pool builds, in the figures a user plans with: `gpu-pool plan`'s rows.

Read from a pool record (plan/record.py), so a pool from the settings and one from any app's
cloud assembly are summed up alike. GPUs per node come from the catalog, prices from
model/prices.py. The cost at max size is the on-demand price of every node the pool may run at
once: max_size nodes of each node group, each of its entry's dearest type; for a NodePool, the
dearest mix of its types within its node and GPU limits. Reserved and Spot capacity
bill otherwise, Auto Mode nodes add EKS's management fee, and the summary says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpu_pool.model import catalog
from gpu_pool.model.prices import on_demand_usd_per_hour
from gpu_pool.plan.dra import (
    CHANNEL_DEVICE_CLASS,
    DAEMON_DEVICE_CLASS,
    DRA_DRIVER,
    GPU_DEVICE_CLASS,
)
from gpu_pool.plan.efa_dra import EFA_DEVICE_CLASS, EFA_DRA_DRIVER
from gpu_pool.plan.quota import largest_mix, vcpus_at_max
from gpu_pool.plan.record import PoolRecord
from gpu_pool.settings import CapacityReservationSettings


@dataclass(frozen=True)
class NodeKind:
    """One instance type the pool launches: its GPUs and what a node of it advertises."""

    instance_type: str
    gpus: int
    # Resource -> count a node advertises (its GPUs, or its shares when pods share them; none
    # when the DRA driver publishes its GPUs).
    advertises: Mapping[str, int]
    usd_per_hour: float | None


@dataclass(frozen=True)
class QuotaNeed:
    """The most vCPUs the pool runs at once under one EC2 vCPU quota (plan/quota.py), and the
    quota's value for the account where the cached lookup holds it (None: not known here)."""

    code: str
    name: str
    vcpus_at_max: int
    value: float | None


@dataclass(frozen=True)
class PoolSummary:
    """One pool's row. A None size or cost: the record does not say (an older gpu-pool wrote
    it) or the price table has no price for one of its types."""

    pool: str
    cluster: str | None
    region: str | None
    provisioner: str
    # "node group g5.xlarge in us-east-1a" per node group, or "NodePool gpu-pool-<pool>".
    launched_by: tuple[str, ...]
    nodes: tuple[NodeKind, ...]
    # Empty: every zone of the cluster's subnets.
    zones: tuple[str, ...]
    min_size: int | None
    max_size: int | None
    max_nodes: int | None
    max_gpus: int | None
    reservation: str | None
    efa_interfaces: int
    gpu_software: str
    sharing: str | None
    # The DRA DeviceClasses pods claim the pool's devices by, with what a node has of each.
    device_classes: tuple[str, ...]
    tolerations: tuple[str, ...]
    # What repair does for its nodes (RepairPlan.describe); None: the record predates repair.
    repair: str | None
    usd_per_hour_at_max: float | None
    # The EC2 vCPU quotas its nodes count against (none for a Capacity Block pool).
    vcpu_quotas: tuple[QuotaNeed, ...]
    # How the pool is billed where the on-demand figure is not what it costs; None: on demand.
    billing_note: str | None


def pool_summary(record: PoolRecord, quotas: Mapping[str, float] | None = None) -> PoolSummary:
    """The summary of one pool; `quotas`: the values of the account's vCPU quotas in the pool's
    Region, by code, where known."""
    sizes = _node_group_sizes(record) if record.node_groups else _node_pool_sizes(record)
    needs = tuple(
        QuotaNeed(quota.code, quota.name, vcpus, (quotas or {}).get(quota.code))
        for quota, vcpus in vcpus_at_max(record).items()
    )
    return _summary(record, *sizes, needs)


def _node_group_sizes(
    record: PoolRecord,
) -> tuple[tuple[str, ...], list[str], tuple[str, ...], int | None, int | None, float | None]:
    """Node groups: max_size nodes each."""
    groups = record.node_groups
    launched_by = tuple(
        f"node group {'/'.join(g.instance_types)}"
        + (f" in {g.zone}" if g.zone else "")
        + (f" ({g.name})" if g.name else "")
        for g in groups
    )
    types = list(dict.fromkeys(t for g in groups for t in g.instance_types))
    zones = tuple(dict.fromkeys(g.zone for g in groups if g.zone))
    size = record.max_size
    if size is None:
        return launched_by, types, zones, None, None, None
    cost: float | None = 0.0
    for group in groups:
        prices = [on_demand_usd_per_hour(t) for t in group.instance_types]
        dearest = None if None in prices else max(p for p in prices if p is not None)
        cost = None if cost is None or dearest is None else cost + size * dearest
    return launched_by, types, zones, size * len(groups), sum(g.gpus for g in groups) * size, cost


def _node_pool_sizes(
    record: PoolRecord,
) -> tuple[tuple[str, ...], list[str], tuple[str, ...], int | None, int | None, float | None]:
    """A NodePool: at most max_size nodes and gpu_limit GPUs, of any of its types."""
    launched_by = (f"NodePool {record.node_pool}",)
    types = list(record.instance_types or ())
    zones = tuple(record.zones or ())
    size, limit = record.max_size, record.gpu_limit
    if size is None or limit is None or not types:
        return launched_by, types, zones, None, None, None
    gpus = {t: catalog.lookup(t).gpu_count for t in types}
    max_gpus = min(limit, size * max(gpus.values()))
    prices = {t: on_demand_usd_per_hour(t) for t in types}
    if None in prices.values():
        return launched_by, types, zones, size, max_gpus, None
    # The dearest type of each GPU count: a node of another type with as many GPUs costs less.
    dearest: dict[int, float] = {}
    for name, price in prices.items():
        if price is not None:
            dearest[gpus[name]] = max(price, dearest.get(gpus[name], 0.0))
    return launched_by, types, zones, size, max_gpus, largest_mix(size, limit, dearest)


def _summary(
    record: PoolRecord,
    launched_by: tuple[str, ...],
    types: Sequence[str],
    zones: tuple[str, ...],
    max_nodes: int | None,
    max_gpus: int | None,
    cost: float | None,
    needs: tuple[QuotaNeed, ...],
) -> PoolSummary:
    nodes = []
    for name in types:
        gpus = catalog.lookup(name).gpu_count
        advertises = (
            record.sharing.advertised(gpus) if record.sharing else {record.gpu_resource: gpus}
        )
        if record.gpu_software == DRA_DRIVER:
            advertises = {}
        nodes.append(
            NodeKind(
                name,
                gpus,
                {resource: n for resource, n in advertises.items() if n},
                on_demand_usd_per_hour(name),
            )
        )
    return PoolSummary(
        pool=record.name,
        cluster=record.cluster_name,
        region=record.region,
        provisioner=record.provisioner,
        launched_by=launched_by,
        nodes=tuple(nodes),
        zones=zones,
        min_size=record.min_size,
        max_size=record.max_size,
        max_nodes=max_nodes,
        max_gpus=max_gpus,
        reservation=_reservation(record),
        efa_interfaces=record.efa_interfaces,
        gpu_software=record.gpu_software,
        sharing=_sharing(record),
        device_classes=_device_classes(record, types),
        tolerations=tuple(_toleration(t) for t in record.tolerations),
        repair=record.repair.describe() if record.repair else None,
        usd_per_hour_at_max=None if cost is None else round(cost, 4),
        vcpu_quotas=needs,
        billing_note=_billing(record),
    )


def _device_classes(record: PoolRecord, types: Sequence[str]) -> tuple[str, ...]:
    """A DRA pool's GPUs, one device of gpu.nvidia.com per GPU of each type; a ComputeDomain
    pool's IMEX channel and daemon classes, one device each per node: the default channel
    class selects channel 0, and the plugin publishes one daemon device (dra-driver-nvidia-gpu
    v0.4.1 cmd/compute-domain-kubelet-plugin/nvlib.go); an EFA DRA pool's EFA interfaces, one
    device of efa.networking.k8s.aws each."""
    found = []
    if record.gpu_software == DRA_DRIVER:
        per_node = ", ".join(f"{catalog.lookup(t).gpu_count} per {t} node" for t in types)
        found.append(f"{GPU_DEVICE_CLASS} ({per_node})")
    if record.compute_domains:
        found.append(
            f"{CHANNEL_DEVICE_CLASS} and {DAEMON_DEVICE_CLASS} (1 each per node, for the "
            "ComputeDomain the node serves)"
        )
    if record.efa_software == EFA_DRA_DRIVER:
        found.append(f"{EFA_DEVICE_CLASS} ({record.efa_interfaces} per node)")
    return tuple(found)


def _toleration(toleration: Mapping[str, str]) -> str:
    """As kubectl shows a taint: key=value:effect, or key:effect without a value."""
    value = toleration.get("value")
    return f"{toleration['key']}{'=' + value if value else ''}:{toleration['effect']}"


def _reservation_of(record: PoolRecord) -> CapacityReservationSettings | None:
    return record.capacity.reservation if record.capacity else None


def _reservation(record: PoolRecord) -> str | None:
    reservation = _reservation_of(record)
    if reservation is None:
        return None
    target = (
        reservation.id or reservation.resource_group_arn or f"preference {reservation.preference}"
    )
    text = f"{reservation.type} {target}"
    if reservation.fallback == "on-demand":
        text += ", on-demand when it is full"
    return text


def _sharing(record: PoolRecord) -> str | None:
    sharing = record.sharing
    if sharing is None:
        return None
    if sharing.mode == "time-slicing":
        return f"time-slicing, {sharing.settings.replicas} shares per GPU"
    layout = ", ".join(f"{n} x {profile}" for profile, n in sharing.mig_devices.items())
    return f"mig ({sharing.settings.strategy}), per GPU: {layout}"


# EKS bills each Auto Mode node a management fee on top of its EC2 price (EKS best practices,
# Auto Mode: "maintains standard EC2 pricing while adding a management fee",
# https://docs.aws.amazon.com/eks/latest/best-practices/automode.html); the table has no fee.
_AUTO_MODE_FEE = "EKS Auto Mode: plus its management fee per node, not in this figure"


def _billing(record: PoolRecord) -> str | None:
    notes = []
    reservation = _reservation_of(record)
    if reservation is not None:
        past = ", on demand past it" if reservation.fallback == "on-demand" else ""
        notes.append(f"reserved ({reservation.type}): billed by the reservation{past}")
    elif record.capacity_type == "SPOT":
        notes.append("Spot: billed at the Spot price, below on demand")
    if record.provisioner == "auto-mode":
        notes.append(_AUTO_MODE_FEE)
    return "; ".join(notes) or None
