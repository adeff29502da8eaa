"""A managed node group of a pool: the unit Cluster Autoscaler scales and templates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpu_pool.model.catalog import Architecture, GpuInstanceType
from gpu_pool.model.labels import GPU_RESOURCE, discovery_tags
from gpu_pool.model.prices import usd_per_gpu_hour
from gpu_pool.plan.node_template import efa_hugepages_mib, node_template_tags
from gpu_pool.settings import Taint


@dataclass(frozen=True)
class NodeGroupPlan:
    """One managed node group: an instance-type entry of the pool, in one zone or all."""

    construct_id: str
    # The setting this group comes from, e.g. `pools.training.instance_types[0]`.
    setting: str
    instance_types: tuple[GpuInstanceType, ...]
    zone: str | None
    ami_type: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    disk_size_gib: int
    # The GPU resources a node advertises when pods share its GPUs (plan/sharing.py); None:
    # its physical GPUs, as nvidia.com/gpu.
    gpu_resources: Mapping[str, int] | None = None
    # Launches into reserved capacity (an ODCR or a Capacity Block), already paid for.
    reserved: bool = False
    # EFA interfaces per node; 0: no EFA.
    efa_interfaces: int = 0
    # The NVMe instance store striped as RAID0 under kubelet (plan/instance_store.py), total GB
    # of the group's smallest type: the nodes' ephemeral storage; 0: the EBS volume is.
    instance_store_gb: int = 0

    @property
    def gpu_count(self) -> int:
        """GPUs per node (the catalog; checks/pool.py rejects entries whose types differ)."""
        return self.instance_types[0].gpu_count

    @property
    def architecture(self) -> Architecture:
        return self.instance_types[0].architecture

    @property
    def scale_up_cost(self) -> tuple[int, int, float]:
        """How much a scale-up of this group costs, for ranking groups that fit the same pod:
        reserved groups first (their capacity is paid for whether used or not), then GPUs per
        node, then the dearest family's price per GPU-hour."""
        return (
            0 if self.reserved else 1,
            self.gpu_count,
            max(usd_per_gpu_hour(t.family) for t in self.instance_types),
        )

    def node_template_tags(self) -> dict[str, str]:
        """The tags CA's zero-node template of this group is built from."""
        resources = self.gpu_resources or {GPU_RESOURCE: self.gpu_count}
        return node_template_tags(
            self.labels,
            self.taints,
            resources,
            f"{self.instance_store_gb}G" if self.instance_store_gb else f"{self.disk_size_gib}Gi",
            self.efa_interfaces,
            efa_hugepages_mib(self.ami_type, self.instance_types) if self.efa_interfaces else 0,
        )

    def autoscaler_tags(self, cluster_name: str) -> dict[str, str]:
        """Every ASG tag CA needs: discovery, then the node template."""
        return discovery_tags(cluster_name) | self.node_template_tags()
