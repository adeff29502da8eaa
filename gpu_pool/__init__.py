"""gpu-pool: a GPU node pool on Amazon EKS that schedules GPU pods and scales from zero."""

from gpu_pool.autoscaler import ClusterAutoscaler
from gpu_pool.node_pool import GpuNodePool
from gpu_pool.settings import (
    AppSettings,
    AutoscalerSettings,
    ClusterSettings,
    ConfigError,
    ExistingClusterSettings,
    GpuOperatorSettings,
    PoolSettings,
    Taint,
    load_settings,
)
from gpu_pool.stack import GpuPoolStack

__all__ = [
    "AppSettings",
    "AutoscalerSettings",
    "ClusterAutoscaler",
    "ClusterSettings",
    "ConfigError",
    "ExistingClusterSettings",
    "GpuNodePool",
    "GpuOperatorSettings",
    "GpuPoolStack",
    "PoolSettings",
    "Taint",
    "load_settings",
]
