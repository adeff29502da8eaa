"""Helm charts gpu-pool installs, each from its pin in versions.py."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.model.versions import ChartPin
from gpu_pool.plan.gpu_software import GpuSoftwareChart


def helm_chart(
    scope: Construct,
    construct_id: str,
    *,
    cluster: eks.ICluster,
    pin: ChartPin,
    release: str,
    version: str | None = None,
    values: dict[str, Any] | None = None,
) -> eks.HelmChart:
    """The pinned chart (`version` overrides the pin) as release `release` in its namespace."""
    return eks.HelmChart(
        scope,
        construct_id,
        cluster=cluster,
        chart=pin.chart,
        repository=pin.repository,
        version=version or pin.version,
        namespace=pin.namespace,
        release=release,
        values=values,
    )


def install_gpu_software(
    scope: Construct, cluster: eks.ICluster, chart: GpuSoftwareChart
) -> eks.HelmChart:
    """The chart that makes a pool's GPUs allocatable (its plan: gpu_software.py)."""
    return helm_chart(
        scope,
        chart.construct_id,
        cluster=cluster,
        pin=chart.pin,
        release=chart.release,
        version=chart.version,
        values=chart.values,
    )
