"""A library user's app in two stacks: the cluster and Cluster Autoscaler in one, the GPU pools
in another (deployed after it), as docs/library.md shows."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks

from gpu_pool import AutoscalerSettings, ClusterAutoscaler, GpuNodePool, PoolSettings, Taint
from tests.support.cfn import unvalidated_app

CLUSTER_NAME = "ml-platform"
PLATFORM_STACK = "Platform"
POOLS_STACK = "GpuPools"


def platform_cluster(stack: cdk.Stack) -> eks.Cluster:
    """A named cluster without default capacity."""
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    return eks.Cluster(
        stack,
        "Cluster",
        cluster_name=CLUSTER_NAME,
        version=eks.KubernetesVersion.V1_35,
        default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
        default_capacity=0,
        kubectl_provider_options=eks.KubectlProviderOptions(
            kubectl_layer=KubectlV35Layer(stack, "KubectlLayer")
        ),
    )


def two_stack_app(outdir: Path) -> cdk.App:
    """The app, synthesized into `outdir`. The autoscaler finds the pools' ASGs by tag
    (least-waste): the priority expander would need their names in the first stack."""
    app = unvalidated_app(outdir=str(outdir))
    platform = cdk.Stack(app, PLATFORM_STACK)
    cluster = platform_cluster(platform)
    ClusterAutoscaler(
        platform,
        "Autoscaler",
        cluster=cluster,
        settings=AutoscalerSettings(expander="least-waste"),
    )
    pools = cdk.Stack(app, POOLS_STACK)
    subnets = cluster.vpc.private_subnets
    GpuNodePool(
        pools,
        "Inference",
        cluster=cluster,
        subnets=subnets,
        settings=PoolSettings(name="inference"),
    )
    GpuNodePool(
        pools,
        "Training",
        cluster=cluster,
        subnets=subnets,
        settings=PoolSettings(
            name="training",
            instance_types=["g6e.12xlarge"],
            labels={"workload": "training"},
            taints=[Taint(key="nvidia.com/gpu", value="true"), Taint(key="team", value="ml")],
        ),
    )
    app.synth()
    return app
