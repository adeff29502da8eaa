"""A pool's GPU sharing, resolved: the device plugin config its nodes read, the labels that pick
it, and what each node then advertises (which Cluster Autoscaler's node template must match).

Every sharing pool has one config of its own, named after the pool: its device plugin release
(or the GPU Operator, for the one operator pool of a cluster) carries it in the chart's config
map with `config.default` set to it, and the pool's nodes carry `nvidia.com/device-plugin.config`
naming it, so pools never read each other's config (NVIDIA/k8s-device-plugin v0.20.0 README,
"Multiple Config Files"; chart values `config.map`, `config.default`).

Time-slicing: the plugin advertises `replicas` shares per GPU, as nvidia.com/gpu or, renamed, as
nvidia.com/gpu.shared. MIG: the GPU Operator's MIG manager partitions each GPU as the node label
`nvidia.com/mig.config` names (NVIDIA GPU Operator docs, "GPU Operator with MIG"); the plugin then
advertises the instances as nvidia.com/gpu (`single`) or nvidia.com/mig-<profile> (`mixed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpu_pool.model.catalog import GpuInstanceType
from gpu_pool.model.labels import (
    ACCELERATOR_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_RESOURCE,
    MIG_CONFIG_LABEL,
    SHARED_GPU_RESOURCE,
    mig_resource,
)
from gpu_pool.settings import PoolSettings, SharingSettings

# The MIG manager's `config.default`, applied to a node without the label: MIG off.
MIG_DISABLED = "all-disabled"


@dataclass(frozen=True)
class SharingPlan:
    """A sharing pool's config (named `config_name`) and what its nodes advertise."""

    settings: SharingSettings
    config_name: str
    # mig: profile -> instances on each GPU: the layout (mixed), or as many of the profile as
    # one of the pool's GPUs holds (single); empty for a profile the GPU lacks (a rule's
    # finding). A MIG pool has one GPU model (checks/sharing.py).
    mig_devices: Mapping[str, int] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return self.settings.mode

    @property
    def advertises_whole_gpus(self) -> bool:
        """Whether nodes still advertise nvidia.com/gpu: not with renamed shares, nor with mixed
        MIG, which advertises each profile under its own name."""
        if self.mode == "time-slicing":
            return not self.settings.rename
        return self.settings.strategy != "mixed"

    @property
    def workload_resources(self) -> list[str]:
        """The resources a pod asks one share of: nvidia.com/gpu, nvidia.com/gpu.shared, or one
        per profile of a mixed layout."""
        if self.mode == "time-slicing":
            return [SHARED_GPU_RESOURCE if self.settings.rename else GPU_RESOURCE]
        if self.settings.strategy == "mixed":
            return [mig_resource(p) for p in self.mig_devices]
        return [GPU_RESOURCE]

    def node_labels(self) -> dict[str, str]:
        """The labels that make a node read this pool's config (and take its MIG layout)."""
        labels = {DEVICE_PLUGIN_CONFIG_LABEL: self.config_name}
        if self.mode == "mig":
            labels[MIG_CONFIG_LABEL] = self.config_name
        return labels

    def advertised(self, gpu_count: int) -> dict[str, int]:
        """The GPU resources a node with `gpu_count` GPUs advertises once its plugin runs."""
        if self.mode == "time-slicing":
            shares = gpu_count * (self.settings.replicas or 1)
            if self.settings.rename:
                return {GPU_RESOURCE: 0, SHARED_GPU_RESOURCE: shares}
            return {GPU_RESOURCE: shares}
        if self.settings.strategy == "mixed":
            return {GPU_RESOURCE: 0} | {
                mig_resource(p): gpu_count * n for p, n in self.mig_devices.items()
            }
        return {GPU_RESOURCE: gpu_count * sum(self.mig_devices.values())}

    def device_plugin_config(self) -> dict[str, Any]:
        """The plugin's config file (version v1; README "Configuration File"). Time-slicing
        fails a container asking for more than one share (`failRequestsGreaterThanOne`, false by
        default only for backward compatibility; NVIDIA recommends true): two shares may be one
        GPU, so a pod asking for 2 would get no more GPU than a pod asking for 1."""
        if self.mode == "mig":
            return {"version": "v1", "flags": {"migStrategy": self.settings.strategy}}
        return {
            "version": "v1",
            "flags": {"migStrategy": "none"},
            "sharing": {
                "timeSlicing": {
                    "renameByDefault": self.settings.rename,
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": GPU_RESOURCE, "replicas": self.settings.replicas}],
                }
            },
        }

    def device_plugin_config_map(self) -> dict[str, str]:
        """The chart's config map: this pool's config, as the YAML text the chart expects."""
        return {self.config_name: _yaml(self.device_plugin_config())}

    def mig_parted_config(self) -> dict[str, str]:
        """The MIG manager's configurations (mig-parted format, key config.yaml): MIG off, and
        this pool's layout on every GPU of the node."""
        config = {
            "version": "v1",
            "mig-configs": {
                MIG_DISABLED: [{"devices": "all", "mig-enabled": False}],
                self.config_name: [
                    {
                        "devices": "all",
                        "mig-enabled": True,
                        "mig-devices": dict(self.mig_devices),
                    }
                ],
            },
        }
        return {"config.yaml": _yaml(config)}


def sharing_plan(pool: PoolSettings, gpu_types: Sequence[GpuInstanceType]) -> SharingPlan | None:
    """The pool's sharing over its resolved instance types, or None with mode none."""
    sharing = pool.sharing
    if sharing.mode == "none":
        return None
    devices: dict[str, int] = {}
    if sharing.strategy == "mixed":
        devices = dict(sharing.layout or {})
    elif sharing.mode == "mig" and gpu_types:
        mig = gpu_types[0].family.mig
        profile = mig.profiles.get(sharing.profile or "") if mig is not None else None
        if profile is not None:
            devices = {profile.name: profile.max_count}
    return SharingPlan(sharing, config_name=pool.name, mig_devices=devices)


def shared_node_labels(labels: Mapping[str, str], sharing: SharingPlan | None) -> dict[str, str]:
    """A pool's node labels (node_labels()'s, which always carry the Cluster Autoscaler GPU
    label) with sharing's: the config labels, and no GPU label where nodes advertise no
    nvidia.com/gpu. CA takes a node with that label and zero allocatable nvidia.com/gpu for one
    whose driver is still starting, and counts it unready for as long as that lasts
    (cluster-autoscaler 1.35 processors/customresources/gpu_processor.go
    FilterOutNodesWithUnreadyResources): forever, for renamed shares or mixed MIG."""
    if sharing is None:
        return dict(labels)
    shared = {**labels, **sharing.node_labels()}
    if not sharing.advertises_whole_gpus:
        del shared[ACCELERATOR_LABEL]
    return shared


def _yaml(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False)
