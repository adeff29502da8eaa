"""The chart that makes a pool's GPUs allocatable (its plan: gpu_software.py), installed."""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.gpu_software import GpuSoftwareChart


def install_gpu_software(
    scope: Construct, cluster: eks.ICluster, chart: GpuSoftwareChart
) -> eks.HelmChart:
    return eks.HelmChart(
        scope,
        chart.construct_id,
        cluster=cluster,
        chart=chart.pin.chart,
        repository=chart.pin.repository,
        version=chart.version,
        namespace=chart.pin.namespace,
        release=chart.release,
        values=chart.values,
    )
