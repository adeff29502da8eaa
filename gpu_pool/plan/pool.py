"""The plan: a pool's settings resolved once into everything that gets built for it.

Per pool: its node groups (instance types through the GPU catalog, zone, AMI type, node labels,
GPU count, the Cluster Autoscaler tags) or, with `provisioner: karpenter`, its NodePool and
EC2NodeClass (plan/karpenter.py), or with `provisioner: auto-mode` its Auto Mode NodePool and
NodeClass (plan/auto_mode.py); its taints; and the chart that makes its GPUs allocatable
with the device plugin pods' scheduling terms. The rules (gpu_pool/checks) read plans, the
constructs render them, and nothing here touches the CDK, so the `gpu-pool` command reads the
same plan without starting it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from gpu_pool.model import catalog
from gpu_pool.model.ami import nvidia_ami_type
from gpu_pool.model.catalog import Architecture, CatalogError, GpuInstanceType
from gpu_pool.model.findings import Finding, error
from gpu_pool.model.labels import GPU_RESOURCE, POOL_LABEL
from gpu_pool.plan.auto_mode import AutoModePoolPlan, auto_mode_pool_plan
from gpu_pool.plan.capacity import CapacityPlan, capacity_plan
from gpu_pool.plan.gpu_software import (
    GpuSoftwareChart,
    efa_device_plugin_chart,
    gpu_software_chart,
    resolved_compute_domains,
    resolved_gpu_software,
)
from gpu_pool.plan.instance_store import resolved_instance_store
from gpu_pool.plan.karpenter import KarpenterPoolPlan, karpenter_pool_plan
from gpu_pool.plan.node_group import NodeGroupPlan
from gpu_pool.plan.node_template import node_labels
from gpu_pool.plan.repair import RepairPlan, repair_plan
from gpu_pool.plan.sharing import SharingPlan, shared_node_labels, sharing_plan
from gpu_pool.settings import AppSettings, PoolSettings, Taint
from gpu_pool.settings.controllers import GpuMetricsChoice
from gpu_pool.settings.field_types import Provisioner


@dataclass(frozen=True)
class NodeShape:
    """Nodes of one kind in a pool (a node group's, or one instance type's from Karpenter), as
    the rules between pools see them."""

    setting: str
    description: str
    labels: Mapping[str, str]
    architecture: Architecture


@dataclass(frozen=True)
class PoolPlan:
    """One GPU pool, resolved; `unresolved` holds what could not be (catalog errors)."""

    settings: PoolSettings
    # Where the settings came from, as messages name them: `pool` or `pools.<name>`.
    setting: str
    entries: tuple[tuple[GpuInstanceType, ...], ...]
    # Cluster Autoscaler pools: their node groups; Karpenter pools: none, and `karpenter`;
    # Auto Mode pools: none, and `auto_mode`.
    node_groups: tuple[NodeGroupPlan, ...]
    karpenter: KarpenterPoolPlan | None
    auto_mode: AutoModePoolPlan | None
    # Reserved capacity and EFA, for both provisioners.
    capacity: CapacityPlan
    gpu_software: str
    chart: GpuSoftwareChart | None
    # EFA pools: the EFA device plugin, one release per pool.
    efa_chart: GpuSoftwareChart | None
    # Node repair of its unhealthy nodes, per provisioner (plan/repair.py).
    repair: RepairPlan
    unresolved: tuple[Finding, ...]
    # How pods share the pool's GPUs; None: they do not (mode none).
    sharing: SharingPlan | None = None
    # Whether its nodes run the NVIDIA DRA driver's ComputeDomains (multi-node NVLink), whatever
    # advertises the GPUs (`gpu_software`).
    compute_domains: bool = False
    # Whether its nodes stripe their NVMe instance store as RAID0 (plan/instance_store.py).
    instance_store_raid0: bool = False

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def provisioner(self) -> Provisioner:
        """What launches the pool's nodes: `cluster-autoscaler` (node groups, `node_groups`),
        `karpenter` (a NodePool, `karpenter`) or `auto-mode` (an Auto Mode NodePool,
        `auto_mode`)."""
        return self.settings.provisioner

    @cached_property
    def node_shapes(self) -> list[NodeShape]:
        """Every kind of node the pool can run, with the labels it carries (computed once: the
        rules between pools read it for every pair)."""
        for node_pool, who in ((self.karpenter, "Karpenter"), (self.auto_mode, "Auto Mode")):
            if node_pool is not None:
                return [
                    NodeShape(
                        f"{self.setting}.instance_types",
                        f"{who}'s {t.name} nodes",
                        node_pool.launched_node_labels(t),
                        t.architecture,
                    )
                    for t in node_pool.instance_types
                ]
        return [
            NodeShape(g.setting, f"{g.instance_types[0].name} nodes", g.labels, g.architecture)
            for g in self.node_groups
        ]

    @property
    def taints(self) -> tuple[Taint, ...]:
        return tuple(self.settings.taints)

    @property
    def workload_node_selector(self) -> dict[str, str]:
        """The nodeSelector that puts a pod on this pool and no other."""
        return {POOL_LABEL: self.name}

    @property
    def workload_tolerations(self) -> list[dict[str, str]]:
        """The tolerations a workload needs for this pool's taints."""
        return [t.toleration() for t in self.settings.taints]

    def node_taints(self) -> list[dict[str, str]]:
        """The taints as a node shows them to Kubernetes."""
        return [t.node_taint() for t in self.settings.taints]


def plan_pool(
    settings: PoolSettings, setting: str = "pool", *, metrics: GpuMetricsChoice = "none"
) -> PoolPlan:
    """Resolve one pool's settings (on a cluster whose `metrics.gpu` is `metrics`). Entries the
    catalog cannot resolve become `unresolved`."""
    entries, unresolved = _resolve_entries(settings, setting)
    instance_types = [t for _, group in entries for t in group]
    ultraserver = any(t.family.ultraserver for t in instance_types)
    software = resolved_gpu_software(settings, ultraserver=ultraserver)
    compute_domains = resolved_compute_domains(settings, ultraserver=ultraserver)
    raid0 = resolved_instance_store(settings, ultraserver=ultraserver)
    sharing = sharing_plan(settings, instance_types)
    node_groups: tuple[NodeGroupPlan, ...] = ()
    karpenter = auto_mode = None
    # The fewest EFA interfaces of its types (checks/reserved.py refuses types that differ), on
    # the cards of its types' layout. The one type with a layout of its own, p6e-gb200, runs only
    # on a Capacity Block (GP-ULTRA-02), and a block pool has one type (checks/reserved.py).
    layouts = {t.efa_cards for t in instance_types}
    capacity = capacity_plan(
        settings,
        min((t.efa_interfaces for t in instance_types), default=0),
        layouts.pop() if len(layouts) == 1 else (),
    )
    if settings.provisioner in ("karpenter", "auto-mode"):
        labels = node_labels(settings.name, settings.labels, instance_types, software)
        if settings.provisioner == "karpenter":
            karpenter = karpenter_pool_plan(
                settings, setting, instance_types, labels, capacity, instance_store_raid0=raid0
            )
        else:
            auto_mode = auto_mode_pool_plan(settings, setting, instance_types, labels)
    else:
        node_groups = tuple(
            NodeGroupPlan(
                construct_id=_group_id(group[0].name, zone),
                setting=f"{setting}.instance_types[{index}]",
                instance_types=group,
                zone=zone,
                ami_type=ami_type_for(settings, group[0].architecture),
                labels=shared_node_labels(
                    node_labels(settings.name, settings.labels, group, software),
                    sharing,
                ),
                taints=tuple(settings.taints),
                disk_size_gib=settings.disk_size_gib,
                gpu_resources=_advertised(software, sharing, group[0].gpu_count),
                reserved=capacity.reserved,
                efa_interfaces=capacity.efa_interfaces,
                instance_store_gb=min(t.instance_store_gb for t in group) if raid0 else 0,
            )
            for zone in _zones(settings)
            for index, group in entries
        )
    return PoolPlan(
        settings=settings,
        setting=setting,
        entries=tuple(group for _, group in entries),
        node_groups=node_groups,
        karpenter=karpenter,
        auto_mode=auto_mode,
        capacity=capacity,
        gpu_software=software,
        chart=gpu_software_chart(
            settings, software, sharing, metrics=metrics, compute_domains=compute_domains
        ),
        efa_chart=efa_device_plugin_chart(settings),
        repair=repair_plan(settings, instance_types, capacity),
        unresolved=tuple(unresolved),
        sharing=sharing,
        compute_domains=compute_domains,
        instance_store_raid0=raid0,
    )


def plan_pools(settings: AppSettings) -> list[PoolPlan]:
    """Every pool of the app's settings, planned, in the order the settings list them."""
    return [
        plan_pool(pool, path, metrics=settings.metrics.gpu)
        for path, pool in settings.pool_settings()
    ]


def _zones(settings: PoolSettings) -> list[str | None]:
    """One placement per listed zone, or one across all subnets (None)."""
    return list(settings.zones) if settings.zones else [None]


def _resolve_entries(
    settings: PoolSettings, setting: str
) -> tuple[list[tuple[int, tuple[GpuInstanceType, ...]]], list[Finding]]:
    entries: list[tuple[int, tuple[GpuInstanceType, ...]]] = []
    findings: list[Finding] = []
    for index, entry in enumerate(settings.instance_types):
        names = [entry] if isinstance(entry, str) else list(entry)
        entry_setting = f"{setting}.instance_types[{index}]"
        if not names:
            findings.append(
                error("GP-CATALOG-01", entry_setting, "empty list; name at least one instance type")
            )
            continue
        resolved = []
        for name in names:
            try:
                resolved.append(catalog.lookup(name))
            except CatalogError as err:
                findings.append(error("GP-CATALOG-02", entry_setting, str(err)))
        if len(resolved) == len(names):
            entries.append((index, tuple(resolved)))
    return entries, findings


def ami_type_for(pool: PoolSettings, architecture: Architecture) -> str:
    """The node group's AMI type: the explicit setting, else the family's for this CPU."""
    return pool.ami_type or nvidia_ami_type(pool.ami_family, architecture)


def _advertised(
    software: str, sharing: SharingPlan | None, gpu_count: int
) -> dict[str, int] | None:
    """The GPU resources a group's node advertises, when not its physical GPUs as
    nvidia.com/gpu (None): a sharing pool's shares; none on a DRA driver node, whose GPUs are
    ResourceSlice devices. The 0 matters there: CA's template for an empty group otherwise takes
    the type's GPUs from its own instance table, and a pod asking for nvidia.com/gpu would scale
    up a DRA group whose node can never run it (a resource tag overrides the table: in
    kubernetes/autoscaler cluster-autoscaler-1.35.2 cloudprovider/aws/aws_manager.go
    buildNodeFromTemplate sets the table's GPUs at :285 and writes the resource tags' values
    over node.Status.Capacity at :290-293)."""
    if software == "dra-driver":
        return {GPU_RESOURCE: 0}
    return sharing.advertised(gpu_count) if sharing else None


def _group_id(instance_type: str, zone: str | None) -> str:
    """Stable construct id: `G5Xlarge`, or `G5XlargeUsEast1a` for a per-zone group."""
    return pascal_case(instance_type + ("-" + zone if zone else ""))


def pascal_case(text: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", text)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)
