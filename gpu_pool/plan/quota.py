"""The most vCPUs a pool may run at once, per EC2 vCPU quota (model/quotas.py): what `gpu-pool
plan` shows beside the quota and GP-REGION-09 compares with its looked-up value.

Node groups: max_size nodes each, of the group's type with the most vCPUs. A NodePool: the
largest mix of its types within its node and GPU limits (the knapsack the plan's cost at max
size solves too). A Capacity Block pool is left out: it runs
no more than its block holds (GP-TRAIN-17 compares max_size with that), and the Capacity Blocks
guide does not say its instances count against the On-Demand quota. An ODCR pool's instances
are On-Demand instances (EC2 user guide, "On-Demand Capacity Reservations") and count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpu_pool.model import catalog
from gpu_pool.model.quotas import VcpuQuota, vcpu_quota
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.record import PoolRecord, pool_record


def quota_needs(plans: Sequence[PoolPlan]) -> dict[VcpuQuota, list[tuple[PoolPlan, int]]]:
    """Each vCPU quota the pools run under -> each pool under it with its vCPUs at max size, in
    pool order (the pools of one account and Region share a quota)."""
    needs: dict[VcpuQuota, list[tuple[PoolPlan, int]]] = {}
    for plan in plans:
        for quota, vcpus in vcpus_at_max(pool_record(plan, None, None)).items():
            needs.setdefault(quota, []).append((plan, vcpus))
    return needs


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
    # A NodePool: per quota, the most vCPUs of one node of each GPU count among its types.
    by_gpus: dict[VcpuQuota, dict[int, int]] = {}
    for name in record.instance_types or ():
        under = vcpu_quota(name, spot)
        if under is not None:
            kind = catalog.lookup(name)
            most = by_gpus.setdefault(under, {})
            most[kind.gpu_count] = max(most.get(kind.gpu_count, 0), kind.vcpus)
    for under, vcpus_by_gpus in by_gpus.items():
        if record.gpu_limit is None or 0 in vcpus_by_gpus:
            # No GPU limit binds (or a type it does not count): max_size nodes of the largest.
            found[under] = size * max(vcpus_by_gpus.values())
        else:
            found[under] = int(largest_mix(size, record.gpu_limit, vcpus_by_gpus))
    return found


def largest_mix(nodes: int, gpu_limit: int, value_by_gpus: Mapping[int, float]) -> float:
    """The largest total value of the nodes a NodePool may run at once: at most `nodes` nodes
    and `gpu_limit` GPUs, any number of each kind (GPUs per node -> a node's value: its price,
    its vCPUs). A knapsack over nodes and GPUs: one kind alone can be less than a mix (2 x
    p5.48xlarge and 4 x g5.xlarge within 10 nodes and 20 GPUs cost more than 2 p5.48xlarge
    alone; 1 g6.48xlarge and 1 g6.xlarge within 2 nodes and 9 GPUs have more vCPUs than one
    g6.48xlarge)."""
    # best[g]: the largest mix of the nodes placed so far using at most g GPUs.
    gpu_limit = min(gpu_limit, nodes * max(value_by_gpus))
    best = [0.0] * (gpu_limit + 1)
    for _ in range(min(nodes, gpu_limit // min(value_by_gpus))):
        best = [
            max([best[g]] + [best[g - n] + value for n, value in value_by_gpus.items() if n <= g])
            for g in range(gpu_limit + 1)
        ]
    return best[gpu_limit]


def _most_vcpus(types: tuple[str, ...], spot: bool) -> dict[VcpuQuota, int]:
    """Quota -> the most vCPUs one node of these types has under it."""
    most: dict[VcpuQuota, int] = {}
    for name in types:
        quota = vcpu_quota(name, spot)
        if quota is not None:
            most[quota] = max(most.get(quota, 0), catalog.lookup(name).vcpus)
    return most
