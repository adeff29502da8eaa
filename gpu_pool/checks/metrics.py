"""The rules about the cluster's GPU metrics (`metrics`)."""

from __future__ import annotations

from gpu_pool.model.findings import Finding, warning
from gpu_pool.settings import MetricsSettings


def check_metrics(metrics: MetricsSettings) -> list[Finding]:
    """Settings the chosen metrics ignore."""
    if metrics.service_monitor and metrics.gpu != "dcgm-exporter":
        return [
            warning(
                "GP-METRICS-01",
                "metrics.service_monitor",
                f"is used with metrics.gpu: dcgm-exporter only; with '{metrics.gpu}' no "
                "ServiceMonitor is made: remove it, or set metrics.gpu: dcgm-exporter",
            )
        ]
    return []
