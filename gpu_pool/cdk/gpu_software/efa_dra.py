"""The cluster's one EFA DRA driver release (its plan: plan/efa_dra.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_cdk import Lazy
from aws_cdk import aws_eks_v2 as eks

from gpu_pool.cdk.gpu_software.charts import helm_chart
from gpu_pool.cdk.registry import AtSynth, ClusterPools, cluster_scope
from gpu_pool.model.versions import AWS_DRANET
from gpu_pool.plan.efa_dra import EFA_DRA_CONSTRUCT_ID, EFA_DRA_RELEASE, efa_dra_chart


def install_efa_dra_driver(cluster: eks.ICluster) -> eks.HelmChart:
    """The aws-dranet release, made by the cluster's first EFA DRA pool and shared by the rest,
    beside the cluster's registry as the NVIDIA DRA driver's is (cdk/gpu_software/dra.py): its
    values are efa_dra_chart's, produced at synth from the registry, so pools added later count
    too."""
    holder = cluster_scope(cluster)
    existing = holder.node.try_find_child(EFA_DRA_CONSTRUCT_ID)
    if isinstance(existing, eks.HelmChart):
        return existing
    pools = holder.pools
    return helm_chart(
        holder,
        EFA_DRA_CONSTRUCT_ID,
        cluster=cluster,
        pin=AWS_DRANET,
        release=EFA_DRA_RELEASE,
        values={key: Lazy.any(AtSynth(_value_at_synth(pools, key))) for key in _values(pools)},
    )


def _value_at_synth(pools: ClusterPools, key: str) -> Callable[[], Any]:
    return lambda: _values(pools)[key]


def _values(pools: ClusterPools) -> dict[str, Any]:
    chart = efa_dra_chart(pools.plans)
    if chart is None:
        raise RuntimeError("the EFA DRA driver is installed for a cluster without an EFA DRA pool")
    return chart.values
