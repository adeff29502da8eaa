"""The rules about the cluster's GPU metrics (`metrics`)."""

from __future__ import annotations

from collections.abc import Sequence

from gpu_pool.model.findings import Finding, warning
from gpu_pool.model.versions import CLOUDWATCH_OBSERVABILITY_ADDON_VERSION
from gpu_pool.plan.metrics import CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.settings import MetricsSettings


def check_metrics(metrics: MetricsSettings, plans: Sequence[PoolPlan]) -> list[Finding]:
    """Settings the chosen metrics ignore, and pools whose nodes they would not reach."""
    findings = []
    if metrics.service_monitor and metrics.gpu != "dcgm-exporter":
        findings.append(
            warning(
                "GP-METRICS-01",
                "metrics.service_monitor",
                f"is used with metrics.gpu: dcgm-exporter only; with '{metrics.gpu}' no "
                "ServiceMonitor is made: remove it, or set metrics.gpu: dcgm-exporter",
            )
        )
    if metrics.gpu == "cloudwatch":
        findings += [f for f in map(_beyond_cloudwatch_exporter, plans) if f is not None]
    return findings


def _beyond_cloudwatch_exporter(plan: PoolPlan) -> Finding | None:
    """The pool's instance types the CloudWatch add-on runs no DCGM exporter on, if any."""
    names = dict.fromkeys(t.name for group in plan.entries for t in group)
    skipped = [n for n in names if n not in CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES]
    if not skipped:
        return None
    return warning(
        "GP-METRICS-02",
        f"{plan.setting}.instance_types",
        f"{', '.join(skipped)}: the CloudWatch add-on ({CLOUDWATCH_OBSERVABILITY_ADDON_VERSION}) "
        "runs its DCGM exporter only on the instance types its chart lists "
        "(dcgmExporter.affinity), and these are not among them: their nodes send no GPU metrics; "
        "use metrics.gpu: dcgm-exporter, which finds GPU nodes by label",
    )
