"""gpu-pool: a GPU node pool on Amazon EKS that schedules GPU pods and scales from zero.

Exports load on first use, so the `gpu-pool` command line tool does not start the CDK's
JavaScript runtime it never needs.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ClusterAutoscaler": "gpu_pool.autoscaler",
    "GpuNodePool": "gpu_pool.node_pool",
    "GpuPoolStack": "gpu_pool.stack",
    "AppSettings": "gpu_pool.settings",
    "AutoscalerSettings": "gpu_pool.settings",
    "ClusterSettings": "gpu_pool.settings",
    "ConfigError": "gpu_pool.settings",
    "ExistingClusterSettings": "gpu_pool.settings",
    "GpuOperatorSettings": "gpu_pool.settings",
    "PoolPlan": "gpu_pool.plan",
    "PoolSettings": "gpu_pool.settings",
    "Taint": "gpu_pool.settings",
    "load_settings": "gpu_pool.settings",
    "plan_pool": "gpu_pool.plan",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gpu_pool' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
