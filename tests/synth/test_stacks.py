"""Constructs of one cluster in several stacks: the split CloudFormation cannot deploy (the
priority expander in a stack the pools' stack deploys after) is a ConfigError naming what to
move where, in either construct order, instead of jsii's DependencyCycle at synth."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from gpu_pool import ClusterAutoscaler, ConfigError, GpuNodePool, PoolSettings
from tests.support.cfn import unvalidated_app
from tests.support.two_stacks import platform_cluster

CYCLE = (
    "the priority expander of ClusterAutoscaler 'Platform/Autoscaler' names the ASGs of the node "
    "groups of GpuNodePool 'GpuPools/Inference', but stack 'GpuPools' deploys after stack "
    "'Platform': create the ClusterAutoscaler in stack 'GpuPools' (or in a stack that depends on "
    "it), or set AutoscalerSettings(expander='least-waste'), which finds the ASGs by their tags "
    "alone"
)
# The construct being created when the cycle shows names itself first (report.names_itself).
SECOND = {True: "GpuNodePool 'GpuPools/Inference'", False: "ClusterAutoscaler 'Platform/Autoscaler'"}


@pytest.mark.parametrize("autoscaler_first", [True, False], ids=["autoscaler-first", "pool-first"])
def test_the_priority_expander_in_the_clusters_stack_with_pools_in_another_is_refused(
    autoscaler_first,
):
    app = unvalidated_app()
    platform = cdk.Stack(app, "Platform")
    cluster = platform_cluster(platform)
    pools = cdk.Stack(app, "GpuPools")

    def autoscaler():
        ClusterAutoscaler(platform, "Autoscaler", cluster=cluster)

    def pool():
        GpuNodePool(
            pools,
            "Inference",
            cluster=cluster,
            subnets=cluster.vpc.private_subnets,
            settings=PoolSettings(name="inference"),
        )

    first, second = (autoscaler, pool) if autoscaler_first else (pool, autoscaler)
    first()
    with pytest.raises(ConfigError) as raised:
        second()
    assert str(raised.value) == f"{SECOND[autoscaler_first]}: {CYCLE}"


def test_the_priority_expander_in_a_stack_after_the_pools_synthesizes():
    """Cluster, pools, autoscaler: each stack deploys after the one before."""
    app = unvalidated_app()
    platform = cdk.Stack(app, "Platform")
    cluster = platform_cluster(platform)
    pools = cdk.Stack(app, "GpuPools")
    GpuNodePool(
        pools,
        "Inference",
        cluster=cluster,
        subnets=cluster.vpc.private_subnets,
        settings=PoolSettings(name="inference"),
    )
    scaling = cdk.Stack(app, "Scaling")
    ClusterAutoscaler(scaling, "Autoscaler", cluster=cluster)
    assembly = app.synth()
    scaling_after = {d.id for d in assembly.get_stack_by_name("Scaling").dependencies}
    assert scaling_after - {"Scaling.assets"} == {"Platform", "GpuPools"}
