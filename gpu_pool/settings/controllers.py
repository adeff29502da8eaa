"""The cluster-wide controllers' settings: Cluster Autoscaler, Karpenter, GPU metrics."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    field_validator,
)

from gpu_pool.settings.base import _Settings
from gpu_pool.settings.field_types import (
    Duration,
)


class AutoscalerSettings(_Settings):
    """Cluster Autoscaler. Scale-down defaults favour cost: GPU nodes are the expensive ones."""

    enabled: bool = True
    """Install Cluster Autoscaler (pools with min 0 never start a node without it)."""
    scale_down_unneeded_time: Duration = "5m"
    """How long a node must be unneeded before it is removed (CA default 10m)."""
    scale_down_delay_after_add: Duration = "5m"
    """Pause after a scale-up before scale-down is considered (CA default 10m)."""
    expander: Literal["priority", "least-waste", "random", "most-pods"] = "priority"
    """priority: among groups that fit a pod, the one with the fewest GPUs per node, then the
    cheaper family (priorities generated from the catalog), then least-waste. least-waste alone
    scores CPU and memory only, so between GPU groups it picks at random."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Where the autoscaler pod runs; empty means the app's system node group (new cluster) or
    anywhere untainted (existing cluster)."""
    chart_version: str | None = None
    """Overrides for the pins in gpu_pool/model/versions.py; the image minor must equal the
    cluster's."""
    image_tag: str | None = None
    """Override for the pinned image tag; its minor must equal the cluster's."""

    @field_validator("expander", mode="before")
    @classmethod
    def _not_price(cls, value: object) -> object:
        if value == "price":
            raise ValueError(
                "'price' makes Cluster Autoscaler exit at start on AWS (its AWS provider has no "
                "pricing); use 'priority', which prefers fewer GPUs, then cheaper families"
            )
        return value


class KarpenterSettings(_Settings):
    """The Karpenter installation, made once per cluster when a pool uses it."""

    chart_version: str | None = None
    """Override for the chart pin in gpu_pool/model/versions.py (both charts share it)."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Where the controller runs; empty means the app's system node group (new cluster) or anywhere
    untainted (existing cluster). Never on the GPU pools."""


GpuMetricsChoice = Literal["none", "dcgm-exporter", "cloudwatch"]


class MetricsSettings(_Settings):
    """GPU metrics for the cluster, opt-in (docs/gpu-sharing.md#gpu-metrics)."""

    gpu: GpuMetricsChoice = "none"
    """none; dcgm-exporter: NVIDIA's exporter (Prometheus format, port 9400) on every GPU node
    whose pool does not use the GPU Operator (which runs its own); cloudwatch: the Amazon
    CloudWatch Observability EKS add-on (Container Insights, GPU metrics included)."""
    service_monitor: bool = False
    """dcgm-exporter: also create its ServiceMonitor, which needs the Prometheus Operator's
    CRDs in the cluster."""
