"""The pool record: what the `gpu-pool` command needs of a pool, as the pool construct writes it.

GpuNodePool and KarpenterNodePool write one per pool, in any app: as construct metadata of type
`POOL_RECORD_TYPE` in the cloud assembly (literal values only: a name EKS generates is null)
and as a stack output whose value is the record's JSON (deploy-time values resolved). The
command reads them with `--cdk-out DIR` or `--stack NAME` instead of the bundled app's settings.

`version` changes only when a reader of an older version would misread a record; fields added
without a change are ignored by older readers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from gpu_pool.model.karpenter_api import resource_name
from gpu_pool.model.labels import GPU_RESOURCE
from gpu_pool.plan.capacity import CapacityPlan
from gpu_pool.plan.efa_dra import EFA_DRA_DRIVER, efa_dra_pools
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.repair import RepairPlan
from gpu_pool.plan.sharing import SharingPlan
from gpu_pool.settings.field_types import PoolName, Provisioner

RECORD_VERSION = 1
# The metadata entry type in the cloud assembly, and the `kind` of the JSON in a stack output.
POOL_RECORD_TYPE = "gpu-pool.io/pool-record"


class RecordError(ValueError):
    """A record this command cannot read: not one, malformed, or of a newer version."""


@dataclass(frozen=True)
class NodeGroupRecord:
    """A managed node group of a Cluster Autoscaler pool."""

    instance_types: tuple[str, ...]
    gpus: int
    zone: str | None = None
    # The deployed node group's name: in stack outputs only.
    name: str | None = None


@dataclass(frozen=True)
class PoolRecord:
    """One pool as the command sees it. A field that is None is absent from the JSON (CDK drops
    nulls): `cluster_name` and `region` where they are known only at deploy time (in the cloud
    assembly of an environment-agnostic stack, or of a cluster whose name EKS generates)."""

    name: PoolName
    provisioner: Provisioner
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]
    gpu_software: str
    gpu_resource: str
    # GPUs of the pool's smallest node: the most one pod may ask for and still fit every node.
    gpus_per_node: int
    node_groups: tuple[NodeGroupRecord, ...]
    cluster_name: str | None = None
    region: str | None = None
    # A Karpenter or Auto Mode pool's NodePool (and node class) name.
    node_pool: str | None = None
    # A pool that shares its GPUs: its config and what its nodes advertise.
    sharing: SharingPlan | None = None
    # A training pool's reserved capacity and EFA (what verify and doctor read); None: neither.
    capacity: CapacityPlan | None = None
    # Nodes per node group, or a NodePool's node limit (`gpu-pool plan` reads these; None in
    # records written before they were added).
    min_size: int | None = None
    max_size: int | None = None
    # ON_DEMAND or SPOT (what `gpu-pool plan` says the pool is billed at).
    capacity_type: str | None = None
    # A Karpenter or Auto Mode pool's instance types, zones (empty: every zone) and GPU limit.
    instance_types: tuple[str, ...] | None = None
    zones: tuple[str, ...] | None = None
    gpu_limit: int | None = None
    # What repair does for the pool's nodes, per provisioner (None in records written before it
    # was added; doctor and verify read its policy()).
    repair: RepairPlan | None = None
    # True: the pool's nodes run the DRA driver's ComputeDomains (plan/pool.py compute_domains);
    # None otherwise, and in records written before it was added.
    compute_domains: bool | None = None
    # "dra-driver" on a pool whose EFA interfaces the EFA DRA driver advertises; None: the EFA
    # device plugin's, or no EFA (and in records written before it was added).
    efa_software: str | None = None
    # The account of its stack, where the command knows it (the settings, the environment of
    # the assembly's stack; gpu_pool/cli/sources.py): the constructs do not write it.
    account: str | None = None
    kind: str = POOL_RECORD_TYPE
    version: int = RECORD_VERSION

    @property
    def efa_interfaces(self) -> int:
        """EFA interfaces per node; 0: no EFA."""
        return self.capacity.efa_interfaces if self.capacity is not None else 0

    @property
    def reservation_id(self) -> str | None:
        """The reservation the pool launches into, where it names one by id."""
        reservation = self.capacity.reservation if self.capacity is not None else None
        return reservation.id if reservation is not None else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = _ADAPTER.dump_python(self, mode="json", exclude_none=True)
        return data

    @classmethod
    def from_json(cls, data: Any) -> PoolRecord:
        """The record in `data` (parsed JSON); RecordError says what is wrong with it."""
        if not isinstance(data, dict) or data.get("kind") != POOL_RECORD_TYPE:
            raise RecordError(f'not a gpu-pool record (no "kind": "{POOL_RECORD_TYPE}")')
        version = data.get("version")
        if not isinstance(version, int) or not 1 <= version <= RECORD_VERSION:
            raise RecordError(
                f"record version {version!r}; this gpu-pool reads versions 1 to "
                f"{RECORD_VERSION}: upgrade the command to the library's version"
            )
        try:
            record = _ADAPTER.validate_python(data)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise RecordError(f"malformed record: {where}: {first['msg']}") from None
        # A synth refuses time-slicing without replicas (GP-SHARE-05), so no construct writes
        # such a record; one edited so would make verify and doctor expect made-up shares.
        sharing = record.sharing
        if sharing and sharing.mode == "time-slicing" and sharing.settings.replicas is None:
            raise RecordError(
                "malformed record: sharing.settings.replicas: required with mode time-slicing"
            )
        return record


_ADAPTER = TypeAdapter(PoolRecord)


def pool_record(
    plan: PoolPlan,
    cluster_name: str | None,
    region: str | None,
    node_group_names: Sequence[str] | None = None,
) -> PoolRecord:
    """The record of `plan` on the cluster `cluster_name`; `node_group_names` (one per node
    group, in plan order) when they are known."""
    names: Sequence[str | None] = node_group_names or [None] * len(plan.node_groups)
    gpus = [t.gpu_count for group in plan.entries for t in group]
    node_pool_plan = plan.karpenter or plan.auto_mode
    return PoolRecord(
        name=plan.name,
        cluster_name=cluster_name,
        region=region,
        provisioner=plan.provisioner,
        node_selector=plan.workload_node_selector,
        tolerations=tuple(plan.workload_tolerations),
        gpu_software=plan.gpu_software,
        gpu_resource=plan.sharing.workload_resources[0] if plan.sharing else GPU_RESOURCE,
        gpus_per_node=min(gpus, default=0),
        node_groups=tuple(
            NodeGroupRecord(
                instance_types=tuple(t.name for t in group.instance_types),
                zone=group.zone,
                gpus=group.gpu_count,
                name=name,
            )
            for group, name in zip(plan.node_groups, names, strict=True)
        ),
        node_pool=resource_name(plan.name) if plan.provisioner != "cluster-autoscaler" else None,
        sharing=plan.sharing,
        capacity=plan.capacity if plan.capacity.reserved or plan.capacity.efa else None,
        min_size=plan.settings.min_size,
        max_size=plan.settings.max_size,
        capacity_type=plan.settings.capacity_type,
        instance_types=tuple(t.name for t in node_pool_plan.instance_types)
        if node_pool_plan
        else None,
        zones=tuple(plan.settings.zones) if node_pool_plan else None,
        gpu_limit=node_pool_plan.gpu_limit if node_pool_plan else None,
        repair=plan.repair,
        compute_domains=plan.compute_domains or None,
        efa_software=EFA_DRA_DRIVER if efa_dra_pools([plan]) else None,
    )
