"""An EKS Auto Mode pool's plan: a karpenter.sh/v1 NodePool and its eks.amazonaws.com/v1
NodeClass (EKS user guide, automode/create-node-pool.adoc and create-node-class.adoc).

Auto Mode brings the NVIDIA driver and device plugin itself (auto-accelerated.adoc: the plugin
"is not visible as a daemon set"), so the plan has no chart. Every pool gets a NodeClass of its
own: its disk (Auto Mode's default is 80 GiB), its subnets and security group, its tags; and the
app creates Auto Mode clusters without the built-in node pools, which leaves no `default`
NodeClass to point to (create-node-pool.adoc, "Cluster without built-in node pools").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from gpu_pool.model.auto_mode_api import (
    COMPUTE_TYPE_LABEL,
    DEFAULT_EXPIRE_AFTER,
    GPU_COUNT_LABEL,
    GPU_MANUFACTURER_LABEL,
    INSTANCE_FAMILY_LABEL,
    NODE_CLASS_API,
    NODE_CLASS_GROUP,
    NODE_CLASS_LABEL,
)
from gpu_pool.model.catalog import GpuInstanceType
from gpu_pool.model.karpenter_api import resource_name
from gpu_pool.model.labels import POOL_LABEL
from gpu_pool.plan.node_pool import NodePoolPlan, gpu_limit
from gpu_pool.settings import PoolSettings


@dataclass(frozen=True)
class AutoModePoolPlan(NodePoolPlan):
    """One pool as an Auto Mode NodePool with its own NodeClass."""

    node_class_group: ClassVar[str] = NODE_CLASS_GROUP
    node_class_kind: ClassVar[str] = "NodeClass"
    gpu_manufacturer_label: ClassVar[str] = GPU_MANUFACTURER_LABEL

    @property
    def expire_after(self) -> str:
        """`karpenter.expire_after` where the settings give it, else Auto Mode's own 336h:
        the project's 720h default is beyond the 21 days Auto Mode lets a node live."""
        karpenter = self.settings.karpenter
        return (
            karpenter.expire_after
            if "expire_after" in karpenter.model_fields_set
            else DEFAULT_EXPIRE_AFTER
        )

    def node_class(
        self,
        role: str,
        subnet_ids: Sequence[str],
        security_group_ids: Sequence[str],
        tags: Mapping[str, str],
        *,
        tag_pool: bool = True,
    ) -> dict[str, Any]:
        """The NodeClass; the arguments are deploy-time values (tokens in a stack). Its role
        needs an access entry of type EC2 with AmazonEKSAutoNodePolicy. Its tags are `tags`
        and, with `tag_pool` (the default), gpu-pool.io/pool: any of them needs the cluster
        role's statement for NodeClass tags (model/auto_mode_api.py), which the app gives only
        the role of a cluster it creates."""
        storage: dict[str, Any] = {"size": f"{self.settings.disk_size_gib}Gi"}
        if self.settings.volume_kms_key_arn:
            storage["kmsKeyID"] = self.settings.volume_kms_key_arn
        return {
            "apiVersion": NODE_CLASS_API,
            "kind": "NodeClass",
            "metadata": {"name": resource_name(self.name)},
            "spec": {
                "role": role,
                "subnetSelectorTerms": [{"id": s} for s in subnet_ids],
                "securityGroupSelectorTerms": [{"id": g} for g in security_group_ids],
                "ephemeralStorage": storage,
                "tags": {**({POOL_LABEL: self.name} if tag_pool else {}), **tags},
            },
        }

    @property
    def volume_key_arn(self) -> str | None:
        """`volume_kms_key_arn` where it is a key's ARN, which an IAM policy can name as its
        resource; None without a key or for an alias ARN (KMS authorizes on the key's ARN)."""
        key = self.settings.volume_kms_key_arn
        return key if key is not None and ":key/" in key else None

    def launched_node_labels(
        self, instance_type: GpuInstanceType, zone: str | None = None
    ) -> dict[str, str]:
        """With those Auto Mode sets (create-node-pool.adoc, "Supported Labels")."""
        return {
            **super().launched_node_labels(instance_type, zone),
            NODE_CLASS_LABEL: resource_name(self.name),
            COMPUTE_TYPE_LABEL: "auto",
            INSTANCE_FAMILY_LABEL: instance_type.family.family,
            GPU_COUNT_LABEL: str(instance_type.gpu_count),
        }


def auto_mode_pool_plan(
    settings: PoolSettings,
    setting: str,
    instance_types: Sequence[GpuInstanceType],
    labels: Mapping[str, str],
) -> AutoModePoolPlan:
    largest = max((t.gpu_count for t in instance_types), default=0)
    return AutoModePoolPlan(
        name=settings.name,
        setting=setting,
        settings=settings,
        instance_types=tuple(instance_types),
        labels=labels,
        gpu_limit=gpu_limit(settings, largest),
    )
