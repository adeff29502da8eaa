"""The most vCPUs a pool may run at once, per EC2 vCPU quota (model/quotas.py): what `gpu-pool
plan` shows beside the quota and GP-REGION-09 compares with its looked-up value.

Node groups: max_size nodes each, of the group's type with the most vCPUs. A NodePool: of each
type, as many nodes as its node and GPU limits allow, the most vCPUs of any one type (a mix
stays below the largest type's share of the limits). A Capacity Block pool is left out: it runs
no more than its block holds (GP-TRAIN-17 compares max_size with that), and the Capacity Blocks
guide does not say its instances count against the On-Demand quota. An ODCR pool's instances
are On-Demand instances (EC2 user guide, "On-Demand Capacity Reservations") and count.
"""

from __future__ import annotations

from gpu_pool.model import catalog
from gpu_pool.model.quotas import VcpuQuota, vcpu_quota
from gpu_pool.plan.record import PoolRecord


def vcpus_at_max(record: PoolRecord) -> dict[VcpuQuota, int]:
    """Quota -> the pool's vCPUs under it at max size; empty when the record has no size (an
    older gpu-pool wrote it) or the pool runs in a Capacity Block."""
    size = record.max_size
    if size is None or (record.capacity is not None and record.capacity.capacity_block):
        return {}
    spot = record.capacity_type == "SPOT"
    found: dict[VcpuQuota, int] = {}
    if record.node_groups:
        for group in record.node_groups:
            for quota, vcpus in _most_vcpus(group.instance_types, spot).items():
                found[quota] = found.get(quota, 0) + size * vcpus
        return found
    for name in record.instance_types or ():
        under = vcpu_quota(name, spot)
        if under is None:
            continue
        kind = catalog.lookup(name)
        nodes = size
        if record.gpu_limit is not None and kind.gpu_count:
            nodes = min(nodes, record.gpu_limit // kind.gpu_count)
        found[under] = max(found.get(under, 0), nodes * kind.vcpus)
    return found


def _most_vcpus(types: tuple[str, ...], spot: bool) -> dict[VcpuQuota, int]:
    """Quota -> the most vCPUs one node of these types has under it."""
    most: dict[VcpuQuota, int] = {}
    for name in types:
        quota = vcpu_quota(name, spot)
        if quota is not None:
            most[quota] = max(most.get(quota, 0), catalog.lookup(name).vcpus)
    return most
