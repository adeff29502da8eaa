"""A Karpenter pool's plan: the NodePool and EC2NodeClass its settings resolve to.

Field names and rules follow Karpenter's v1 API (karpenter.sh/v1 NodePool, karpenter.k8s.aws/v1
EC2NodeClass, aws/karpenter-provider-aws v1.14.1). Karpenter
reads GPU counts from EC2, so there is no node template to keep right; what matters is that
every node it launches is an NVIDIA node of the pool, carries the pool's labels and taints (its
device plugin selects them), and is never disrupted under a running GPU job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from gpu_pool.model.ami import IMAGE_VOLUME
from gpu_pool.model.catalog import GpuInstanceType
from gpu_pool.model.karpenter_api import (
    GPU_MANUFACTURER_LABEL,
    NODE_CLASS_API,
    NODE_CLASS_GROUP,
    resource_name,
)
from gpu_pool.model.labels import POOL_LABEL
from gpu_pool.model.versions import KARPENTER_AMI_ALIASES
from gpu_pool.plan.capacity import CapacityPlan
from gpu_pool.plan.instance_store import RAID0
from gpu_pool.plan.node_pool import NodePoolPlan, gpu_limit
from gpu_pool.settings import PoolSettings

# Bottlerocket's OS volume as Karpenter sizes it by default; the data volume holds images.
_BOTTLEROCKET_OS_VOLUME_GIB = 4


@dataclass(frozen=True)
class KarpenterPoolPlan(NodePoolPlan):
    """One pool as a Karpenter NodePool with its own EC2NodeClass."""

    node_class_group: ClassVar[str] = NODE_CLASS_GROUP
    node_class_kind: ClassVar[str] = "EC2NodeClass"
    gpu_manufacturer_label: ClassVar[str] = GPU_MANUFACTURER_LABEL

    ami_alias: str
    capacity: CapacityPlan
    # The NVMe instance store as RAID0 (plan/instance_store.py), through Karpenter's own field.
    instance_store_raid0: bool = False

    # A pool of reserved capacity only keeps its nodes: Never for both, so Karpenter removes
    # none of them, empty ones included (NodePool docs at v1.14.1: Never disables consolidation
    # and expiry entirely); the reservation is paid for whether a node runs or not, and a
    # block's end drains them anyway. Disruption is the NodePool's, one for all its nodes: a
    # pool that falls back to on-demand follows the pool's karpenter settings, so an empty
    # on-demand node is removed after consolidate_after and not billed until deleted.
    @property
    def keeps_its_nodes(self) -> bool:
        """Reserved capacity only: disruption Never, whatever the karpenter settings say."""
        reservation = self.capacity.reservation
        return reservation is not None and reservation.fallback == "none"

    @property
    def expire_after(self) -> str:
        return "Never" if self.keeps_its_nodes else self.settings.karpenter.expire_after

    @property
    def consolidate_after(self) -> str:
        return "Never" if self.keeps_its_nodes else self.settings.karpenter.consolidate_after

    def capacity_types(self) -> list[str]:
        """`reserved` (with `on-demand` as its fallback) for a reserved pool."""
        return self.capacity.karpenter_capacity_types(self.settings.capacity_type)

    def ec2_node_class(
        self,
        role: str,
        subnet_ids: Sequence[str],
        security_group_ids: Sequence[str],
        tags: Mapping[str, str],
        placement_group: str | None = None,
    ) -> dict[str, Any]:
        """The EC2NodeClass; the arguments are deploy-time values (tokens in a stack);
        `placement_group`: the placement group the nodes launch into, by name
        (cdk/capacity/efa.py)."""
        settings = self.settings
        spec: dict[str, Any] = {
            "amiSelectorTerms": [{"alias": self.ami_alias}],
            "role": role,
            "subnetSelectorTerms": [{"id": s} for s in subnet_ids],
            "securityGroupSelectorTerms": [{"id": g} for g in security_group_ids],
            "blockDeviceMappings": self._block_devices(),
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": settings.imds_hop_limit,
                "httpTokens": "required",
            },
            "tags": {POOL_LABEL: self.name, **tags},
        }
        reservations = self.capacity.karpenter_reservation_terms()
        if reservations:
            spec["capacityReservationSelectorTerms"] = reservations
        # EFA needs no field here: with networkInterfaces unset, Karpenter gives a node one EFA
        # interface per card when its pods request vpc.amazonaws.com/efa (v1.14.1
        # pkg/providers/amifamily/resolver.go:261, launchtemplate/launchtemplate.go:334).
        if placement_group is not None:
            spec["placementGroupSelector"] = {"name": placement_group}
        if self.instance_store_raid0:
            # Karpenter then counts the array as the node's ephemeral storage (EC2NodeClass
            # instanceStorePolicy, CRD v1.14.1: enum RAID0).
            spec["instanceStorePolicy"] = RAID0
        return {
            "apiVersion": NODE_CLASS_API,
            "kind": "EC2NodeClass",
            "metadata": {"name": resource_name(self.name)},
            "spec": spec,
        }

    def _block_devices(self) -> list[dict[str, Any]]:
        family = self.settings.ami_family
        devices: list[dict[str, Any]] = []
        if family == "BOTTLEROCKET":
            devices.append(
                {"deviceName": "/dev/xvda", "ebs": self._volume(_BOTTLEROCKET_OS_VOLUME_GIB)}
            )
        devices.append(
            {
                "deviceName": IMAGE_VOLUME[family],
                # The volume Karpenter counts as the node's ephemeral storage.
                "rootVolume": True,
                "ebs": self._volume(self.settings.disk_size_gib),
            }
        )
        return devices

    def _volume(self, size_gib: int) -> dict[str, Any]:
        volume: dict[str, Any] = {
            "volumeSize": f"{size_gib}Gi",
            "volumeType": "gp3",
            "encrypted": True,
            "deleteOnTermination": True,
        }
        if self.settings.volume_kms_key_arn:
            volume["kmsKeyID"] = self.settings.volume_kms_key_arn
        return volume

    def launched_node_labels(
        self, instance_type: GpuInstanceType, zone: str | None = None
    ) -> dict[str, str]:
        """With those Karpenter adds from the NodeClaim."""
        return {
            **super().launched_node_labels(instance_type, zone),
            "karpenter.k8s.aws/ec2nodeclass": resource_name(self.name),
            "karpenter.k8s.aws/instance-family": instance_type.family.family,
            "karpenter.k8s.aws/instance-gpu-count": str(instance_type.gpu_count),
            "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true",
        }


def karpenter_pool_plan(
    settings: PoolSettings,
    setting: str,
    instance_types: Sequence[GpuInstanceType],
    labels: Mapping[str, str],
    capacity: CapacityPlan,
    *,
    instance_store_raid0: bool = False,
) -> KarpenterPoolPlan:
    largest = max((t.gpu_count for t in instance_types), default=0)
    return KarpenterPoolPlan(
        name=settings.name,
        setting=setting,
        settings=settings,
        instance_types=tuple(instance_types),
        labels=labels,
        ami_alias=settings.karpenter.ami_alias or KARPENTER_AMI_ALIASES[settings.ami_family],
        gpu_limit=gpu_limit(settings, largest),
        capacity=capacity,
        instance_store_raid0=instance_store_raid0,
    )
