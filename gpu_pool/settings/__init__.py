"""The settings layer: typed models (models.py), where they come from (loading.py; several
clusters: fleet.py), and the one error type every settings mistake raises (errors.py).
`gpu_pool.settings` exports them all."""

from gpu_pool.settings.errors import ConfigError, describe_validation_error
from gpu_pool.settings.fleet import Fleet, FleetCluster, FleetFile, load_fleet, read_fleet
from gpu_pool.settings.loading import (
    CONFIG_KEY,
    CONTEXT_KEY,
    check_context_keys,
    deep_merge,
    load_settings,
    load_settings_with_warnings,
)
from gpu_pool.settings.models import (
    AmiFamily,
    AppSettings,
    AutoscalerSettings,
    CapacityReservationSettings,
    ChartVersions,
    ClusterSettings,
    ControlPlaneLoggingSettings,
    ExistingClusterSettings,
    GpuOperatorSettings,
    KarpenterPoolSettings,
    KarpenterSettings,
    MetricsSettings,
    PoolSettings,
    SharingSettings,
    SystemNodesSettings,
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
