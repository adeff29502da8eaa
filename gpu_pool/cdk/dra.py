"""The cluster's one NVIDIA DRA driver release (its plan: plan/dra.py)."""

from __future__ import annotations

from aws_cdk import Lazy
from aws_cdk import aws_eks_v2 as eks

from gpu_pool.cdk.charts import helm_chart
from gpu_pool.cdk.registry import AtSynth, cluster_scope
from gpu_pool.model.versions import NVIDIA_DRA_DRIVER
from gpu_pool.plan.dra import (
    DRA_CONSTRUCT_ID,
    DRA_DRIVER_STATIC_VALUES,
    DRA_RELEASE,
    dra_pools,
    dra_resources,
    kubelet_plugin_values,
)


def install_dra_driver(cluster: eks.ICluster) -> eks.HelmChart:
    """The DRA driver's release, made by the first DRA pool of the cluster and shared by the
    rest: it lives beside the cluster's registry (`GpuPools<cluster id>`, in the cluster's
    stack), and the pools it serves (its kubelet plugin's selection and tolerations, whether
    ComputeDomains are on) are read from the registry at synth, so DRA pools added after the
    first count too. Like every chart, it waits for the cluster's kubectl provider."""
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
        values={
            **DRA_DRIVER_STATIC_VALUES,
            "resources": Lazy.any(AtSynth(lambda: dra_resources(dra_pools(pools.plans)))),
            "kubeletPlugin": Lazy.any(
                AtSynth(lambda: kubelet_plugin_values(dra_pools(pools.plans)))
            ),
        },
    )
