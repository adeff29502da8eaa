"""The cluster's one NVIDIA DRA driver release (its plan: plan/dra.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_cdk import Lazy
from aws_cdk import aws_eks_v2 as eks

from gpu_pool.cdk.gpu_software.charts import helm_chart
from gpu_pool.cdk.registry import AtSynth, ClusterPools, cluster_scope
from gpu_pool.model.versions import NVIDIA_DRA_DRIVER
from gpu_pool.plan.dra import DRA_CONSTRUCT_ID, DRA_RELEASE, dra_driver_chart


def install_dra_driver(cluster: eks.ICluster) -> eks.HelmChart:
    """The DRA driver's release, made by the first DRA pool of the cluster and shared by the
    rest: it lives beside the cluster's registry (`GpuPools<cluster id>`, in the cluster's
    stack). Its values are dra_driver_chart's, the chart the rules read, produced at synth
    from the registry (each top-level value a Lazy, as HelmChart takes a mapping), so DRA
    pools added after the first count too. Like every chart, it waits for the cluster's
    kubectl provider. The calling pool has registered itself already (cdk/pool.py)."""
    holder = cluster_scope(cluster)
    existing = holder.node.try_find_child(DRA_CONSTRUCT_ID)
    if isinstance(existing, eks.HelmChart):
        return existing
    pools = holder.pools
    return helm_chart(
        holder,
        DRA_CONSTRUCT_ID,
        cluster=cluster,
        pin=NVIDIA_DRA_DRIVER,
        release=DRA_RELEASE,
        values={key: Lazy.any(AtSynth(_value_at_synth(pools, key))) for key in _values(pools)},
    )


def _value_at_synth(pools: ClusterPools, key: str) -> Callable[[], Any]:
    """Produces the value `key` of the release from the registry, when the stack is synthesized."""
    return lambda: _values(pools)[key]


def _values(pools: ClusterPools) -> dict[str, Any]:
    """The release's values for the cluster's DRA pools as registered now."""
    chart = dra_driver_chart(pools.plans)
    if chart is None:
        raise RuntimeError("the DRA driver is installed for a cluster without a DRA pool")
    return chart.values
