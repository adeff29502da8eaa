"""The settings layer: typed models, one module per section (models.py the document, pool.py,
cluster.py, controllers.py, repair.py), where they come from (loading.py; several clusters:
fleet.py), and the one error type every settings mistake raises (errors.py).
`gpu_pool.settings` exports them all."""

from gpu_pool.settings.cluster import (
    ClusterSettings,
    ControlPlaneLoggingSettings,
    ExistingClusterSettings,
    SystemNodesSettings,
)
from gpu_pool.settings.controllers import AutoscalerSettings, KarpenterSettings, MetricsSettings
from gpu_pool.settings.errors import ConfigError, describe_validation_error
from gpu_pool.settings.field_types import AmiFamily
from gpu_pool.settings.fleet import Fleet, FleetCluster, FleetFile, load_fleet, read_fleet
from gpu_pool.settings.loading import (
    CONFIG_KEY,
    CONTEXT_KEY,
    check_context_keys,
    deep_merge,
    load_settings,
    load_settings_with_warnings,
)
from gpu_pool.settings.models import AppSettings
from gpu_pool.settings.pool import (
    CapacityReservationSettings,
    ChartVersions,
    GpuOperatorSettings,
    KarpenterPoolSettings,
    PoolSettings,
    SharingSettings,
    Taint,
)
from gpu_pool.settings.repair import RepairOverride, RepairSettings

__all__ = [
    "CONFIG_KEY",
    "CONTEXT_KEY",
    "AmiFamily",
    "AppSettings",
    "AutoscalerSettings",
    "CapacityReservationSettings",
    "ChartVersions",
    "ClusterSettings",
    "ConfigError",
    "ControlPlaneLoggingSettings",
    "ExistingClusterSettings",
    "Fleet",
    "FleetCluster",
    "FleetFile",
    "GpuOperatorSettings",
    "KarpenterPoolSettings",
    "KarpenterSettings",
    "MetricsSettings",
    "PoolSettings",
    "RepairOverride",
    "RepairSettings",
    "SharingSettings",
    "SystemNodesSettings",
    "Taint",
    "check_context_keys",
    "deep_merge",
    "describe_validation_error",
    "load_fleet",
    "load_settings",
    "load_settings_with_warnings",
    "read_fleet",
]
