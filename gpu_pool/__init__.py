"""gpu-pool: a GPU node pool on Amazon EKS that schedules GPU pods and scales from zero.

Exports load on first use, so the `gpu-pool` command line tool does not start the CDK's
JavaScript runtime it never needs; type checkers see them through the imports below.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpu_pool.cdk.auto_mode.node_pool import AutoModeNodePool as AutoModeNodePool
    from gpu_pool.cdk.autoscaling.autoscaler import ClusterAutoscaler as ClusterAutoscaler
    from gpu_pool.cdk.cluster.verifier import Verifier as Verifier
    from gpu_pool.cdk.gpu_software.metrics import GpuMetrics as GpuMetrics
    from gpu_pool.cdk.gpu_software.node_health import node_monitoring_agent as node_monitoring_agent
    from gpu_pool.cdk.karpenter.controller import Karpenter as Karpenter
    from gpu_pool.cdk.karpenter.node_pool import KarpenterNodePool as KarpenterNodePool
    from gpu_pool.cdk.nodegroups.pool import GpuNodePool as GpuNodePool
    from gpu_pool.cdk.pipeline import GpuPoolPipeline as GpuPoolPipeline
    from gpu_pool.cdk.stack import GpuPoolStack as GpuPoolStack
    from gpu_pool.plan.pool import PoolPlan as PoolPlan
    from gpu_pool.plan.pool import plan_pool as plan_pool
    from gpu_pool.settings import AppSettings as AppSettings
    from gpu_pool.settings import AutoscalerSettings as AutoscalerSettings
    from gpu_pool.settings import CapacityReservationSettings as CapacityReservationSettings
    from gpu_pool.settings import ChartVersions as ChartVersions
    from gpu_pool.settings import ClusterSettings as ClusterSettings
    from gpu_pool.settings import ConfigError as ConfigError
    from gpu_pool.settings import ControlPlaneLoggingSettings as ControlPlaneLoggingSettings
    from gpu_pool.settings import ExistingClusterSettings as ExistingClusterSettings
    from gpu_pool.settings import GpuOperatorSettings as GpuOperatorSettings
    from gpu_pool.settings import KarpenterPoolSettings as KarpenterPoolSettings
    from gpu_pool.settings import KarpenterSettings as KarpenterSettings
    from gpu_pool.settings import MetricsSettings as MetricsSettings
    from gpu_pool.settings import PoolSettings as PoolSettings
    from gpu_pool.settings import RepairOverride as RepairOverride
    from gpu_pool.settings import RepairSettings as RepairSettings
    from gpu_pool.settings import SharingSettings as SharingSettings
    from gpu_pool.settings import SystemNodesSettings as SystemNodesSettings
    from gpu_pool.settings import Taint as Taint
    from gpu_pool.settings import load_settings as load_settings
    from gpu_pool.settings.pipeline import PipelineSettings as PipelineSettings
    from gpu_pool.settings.pipeline import PipelineSourceSettings as PipelineSourceSettings

_EXPORTS = {
    "AutoModeNodePool": "gpu_pool.cdk.auto_mode.node_pool",
    "ClusterAutoscaler": "gpu_pool.cdk.autoscaling.autoscaler",
    "GpuMetrics": "gpu_pool.cdk.gpu_software.metrics",
    "GpuNodePool": "gpu_pool.cdk.nodegroups.pool",
    "Karpenter": "gpu_pool.cdk.karpenter.controller",
    "KarpenterNodePool": "gpu_pool.cdk.karpenter.node_pool",
    "KarpenterPoolSettings": "gpu_pool.settings",
    "KarpenterSettings": "gpu_pool.settings",
    "GpuPoolStack": "gpu_pool.cdk.stack",
    "GpuPoolPipeline": "gpu_pool.cdk.pipeline",
    "PipelineSettings": "gpu_pool.settings.pipeline",
    "PipelineSourceSettings": "gpu_pool.settings.pipeline",
    "Verifier": "gpu_pool.cdk.cluster.verifier",
    "AppSettings": "gpu_pool.settings",
    "AutoscalerSettings": "gpu_pool.settings",
    "CapacityReservationSettings": "gpu_pool.settings",
    "ChartVersions": "gpu_pool.settings",
    "MetricsSettings": "gpu_pool.settings",
    "SharingSettings": "gpu_pool.settings",
    "ClusterSettings": "gpu_pool.settings",
    "ConfigError": "gpu_pool.settings",
    "ControlPlaneLoggingSettings": "gpu_pool.settings",
    "ExistingClusterSettings": "gpu_pool.settings",
    "GpuOperatorSettings": "gpu_pool.settings",
    "PoolPlan": "gpu_pool.plan.pool",
    "PoolSettings": "gpu_pool.settings",
    "RepairOverride": "gpu_pool.settings",
    "RepairSettings": "gpu_pool.settings",
    "SystemNodesSettings": "gpu_pool.settings",
    "Taint": "gpu_pool.settings",
    "load_settings": "gpu_pool.settings",
    "plan_pool": "gpu_pool.plan.pool",
    "node_monitoring_agent": "gpu_pool.cdk.gpu_software.node_health",
}

__all__ = sorted(_EXPORTS)


def __dir__() -> list[str]:
    """The public API alone (what `__all__` lists), though it loads on first use: not this
    module's own helpers (import_module, TYPE_CHECKING, Any), which are no part of it."""
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gpu_pool' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
