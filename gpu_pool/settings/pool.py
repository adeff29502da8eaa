"""A pool's settings (`pool:` or each entry of `pools:`): its instance types, sizes, labels and
taints, its device software, GPU sharing, reserved capacity and its Karpenter NodePool's."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    model_validator,
)

from gpu_pool.settings.base import _Settings
from gpu_pool.settings.errors import matching
from gpu_pool.settings.field_types import (
    AmiFamily,
    GpuSoftware,
    NvidiaAmiType,
    PoolName,
    Provisioner,
    TaintEffect,
)
from gpu_pool.settings.repair import RepairSettings

# The EKS API's spelling of each effect (AWS::EKS::Nodegroup Taints).
EKS_TAINT_EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
}


class Taint(_Settings):
    """A node taint, effect in Kubernetes spelling; each consumer's form is one method here."""

    key: str = Field(min_length=1, max_length=63)
    """The taint's key, e.g. nvidia.com/gpu."""
    value: str = Field(default="", max_length=63)
    """Its value; pods tolerate it with this value (operator Equal)."""
    effect: TaintEffect = "NoSchedule"
    """NoSchedule, NoExecute or PreferNoSchedule (Kubernetes spelling)."""

    def node_taint(self) -> dict[str, str]:
        """As a node (and a Karpenter NodePool) carries it; no `value` when it is empty."""
        return {
            "key": self.key,
            "effect": self.effect,
            **({"value": self.value} if self.value else {}),
        }

    def eks_taint(self) -> dict[str, str]:
        """As AWS::EKS::Nodegroup takes it (effect NO_SCHEDULE, ...)."""
        return {**self.node_taint(), "effect": EKS_TAINT_EFFECTS[self.effect]}

    def toleration(self) -> dict[str, str]:
        """What a workload needs to land despite it: this key, value and effect."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}

    def any_value_toleration(self) -> dict[str, str]:
        """Tolerates this key and effect whatever the value (what a DaemonSet needs)."""
        return {"key": self.key, "operator": "Exists", "effect": self.effect}

    def template_tag_value(self) -> str:
        """The value of Cluster Autoscaler's node-template taint tag: `<value>:<Effect>`."""
        return f"{self.value}:{self.effect}"


class GpuOperatorSettings(_Settings):
    """NVIDIA GPU Operator components. The EKS NVIDIA AMIs already carry driver and toolkit."""

    driver_enabled: bool = False
    """Install the operator's driver; the EKS NVIDIA AMIs already carry one (keep false)."""
    toolkit_enabled: bool = False
    """Install the operator's container toolkit; the AMIs carry it (keep false)."""


class ChartVersions(_Settings):
    """Overrides for pinned chart/image versions (defaults: gpu_pool/model/versions.py)."""

    device_plugin: str | None = None
    """NVIDIA device plugin chart version; None: the pin."""
    gpu_operator: str | None = None
    """NVIDIA GPU Operator chart version; None: the pin."""


# Karpenter's own durations, with its NodePool CRD's patterns (aws/karpenter-provider-aws v1.15.0
# pkg/apis/crds/karpenter.sh_nodepools.yaml): whole hours, minutes and seconds. `Never` only where
# the CRD allows it: expireAfter and consolidateAfter, not terminationGracePeriod.
KarpenterDuration = Annotated[
    str,
    matching(
        r"^([0-9]+(s|m|h))+$",
        "a duration Karpenter takes: hours, minutes, seconds, e.g. 24h or 1h30m (not Never)",
    ),
]
KarpenterDurationOrNever = Annotated[
    str,
    matching(
        r"^(([0-9]+(s|m|h))+|Never)$",
        "a duration Karpenter takes: hours, minutes, seconds, e.g. 720h or 1h30m, or Never",
    ),
]


class KarpenterPoolSettings(_Settings):
    """How Karpenter runs a pool with `provisioner: karpenter`.

    Only empty nodes are consolidated (WhenEmpty), one node at a time; the same budget paces
    drift. Expiry is not paced by any budget: a node past `expire_after` is drained at once, and
    pods annotated `karpenter.sh/do-not-disrupt` hold it for at most `termination_grace_period`
    (aws/karpenter-provider-aws v1.14.1 website/content/en/docs/concepts/disruption.md).
    """

    ami_alias: str | None = matching(
        r"^[a-z0-9]+@.+$", "an AMI alias family@version such as al2023@v20260714", default=None
    )
    """The EC2NodeClass AMI alias, family@version of the pool's ami_family; None: the pin in
    gpu_pool/model/versions.py. A new version replaces every node of the pool (drift)."""
    consolidate_after: KarpenterDurationOrNever = "5m"
    """How long a node must be empty before Karpenter removes it (Karpenter's default is 0s).
    A pool of reserved capacity only (capacity_reservation without fallback) uses Never."""
    expire_after: KarpenterDurationOrNever = "720h"
    """Maximum node age before it is drained and replaced (Karpenter's default, 30 days); Never:
    nodes live until emptied, drifted or deleted. A pool of reserved capacity only uses Never."""
    termination_grace_period: KarpenterDuration | None = "24h"
    """How long a draining node (expired, drifted, deleted) waits for its pods, do-not-disrupt and
    PodDisruptionBudgets included, before deleting them. 24h: a job running when its node expires
    gets a day to finish, and the node's idle GPUs are billed for at most that long. None: wait
    as long as they run (upstream advises against it unless expire_after is Never)."""
    gpu_limit: int | None = Field(default=None, ge=1)
    """The NodePool's nvidia.com/gpu limit; None: max_size nodes of the pool's largest type."""


ReservationType = Literal["capacity-block", "odcr"]
ReservationId = Annotated[
    str,
    matching(r"^cr-[0-9a-f]{17}$", "a capacity reservation id (cr- and 17 hex digits)"),
]


class CapacityReservationSettings(_Settings):
    """Reserved capacity the pool's nodes launch into: an On-Demand Capacity Reservation (ODCR)
    or a Capacity Block for ML (docs/training.md).

    A Capacity Block is named by `id`; its instance type and zone are the pool's one
    `instance_types` entry and its one `zones` entry. An ODCR pool names one of `id`,
    `resource_group_arn` or `preference`.
    """

    type: ReservationType
    """capacity-block (a Capacity Block for ML) or odcr (an On-Demand Capacity Reservation)."""
    id: ReservationId | None = None
    """The reservation's id (cr- and 17 hex digits); required for a capacity-block."""
    resource_group_arn: str | None = matching(
        r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:[0-9]{12}:group/.+$",
        "a resource group ARN (arn:aws:resource-groups:<region>:<account>:group/<name>)",
        default=None,
    )
    """odcr only: launch into any reservation of this resource group (cluster-autoscaler pools)."""
    preference: Literal["open", "capacity-reservations-only"] | None = None
    """odcr only, instead of id or resource_group_arn (cluster-autoscaler pools): open launches
    into any open reservation that matches, else on demand; capacity-reservations-only launches
    only into reservations."""
    placement_group: str | None = matching(
        r"^[ -~]{1,255}$",
        "a placement group name (1 to 255 ASCII characters, as EC2 CreatePlacementGroup takes)",
        default=None,
    )
    """odcr only: the existing placement group the reservation was created in, by name; the
    nodes launch into it, or they would not match the reservation (EC2 UG cr-cpg). None: no
    placement group. A reserved pool never gets one of its own (docs/training.md)."""
    fallback: Literal["on-demand", "none"] = "none"
    """odcr only: whether nodes may launch On-Demand when the reservation is used up. none:
    reserved capacity only (a resource_group_arn target also gets capacity-reservations-only,
    without which EC2 would launch On-Demand). on-demand: a Karpenter pool adds capacity type
    on-demand after reserved; node groups that target a resource_group_arn launch On-Demand when
    it is full; node groups that target an id fall back through a second, on-demand pool
    (docs/training.md). On Karpenter this also decides disruption: with none the NodePool
    keeps its nodes (consolidate_after and expire_after Never, whatever the karpenter settings
    say); with on-demand the karpenter settings win, so empty nodes are removed."""

    @model_validator(mode="after")
    def _one_target(self) -> CapacityReservationSettings:
        # Each message starts with a field name: the parent prefixes this model's path.
        targets = [
            name
            for name in ("id", "resource_group_arn", "preference")
            if getattr(self, name) is not None
        ]
        if self.type == "capacity-block":
            if self.placement_group is not None:
                raise ValueError(
                    "placement_group: odcr only; a Capacity Block's instances are placed close "
                    "together already, and a placement group can make launches fail while the "
                    "block has room: remove it"
                )
            if self.id is None:
                raise ValueError("id: required with type capacity-block (cr- and 17 hex digits)")
            extra: list[str] = [n for n in ("resource_group_arn", "preference") if n in targets]
            if extra or self.fallback != "none":
                raise ValueError(
                    f"{(extra or ['fallback'])[0]}: odcr only; a capacity-block is named by its "
                    "id alone (fall back through a second, on-demand pool)"
                )
        elif len(targets) != 1:
            raise ValueError(
                f"{targets[1] if targets else 'id'}: an odcr names exactly one of id, "
                f"resource_group_arn or preference (got {', '.join(targets) or 'none'})"
            )
        return self

    @property
    def capacity_block(self) -> bool:
        return self.type == "capacity-block"


SharingMode = Literal["none", "time-slicing", "mig"]
MigStrategy = Literal["single", "mixed"]


class SharingSettings(_Settings):
    """How pods share a pool's GPUs (docs/gpu-sharing.md). `none`: one pod per GPU.
    `time-slicing`: `replicas` pods take turns on each GPU, without memory isolation.
    `mig`: each GPU is partitioned into MIG instances (A100, H100, H200, B200, RTX PRO 6000),
    one `profile` on every GPU (`strategy: single`) or a `layout` of profiles (`mixed`).
    Cluster Autoscaler pools only: Karpenter counts physical GPUs."""

    mode: SharingMode = "none"
    """none, time-slicing or mig."""
    replicas: int | None = Field(default=None, ge=2, le=48)
    """time-slicing: how many pods share each GPU, 2 to 48."""
    rename: bool = False
    """time-slicing: advertise the shares as nvidia.com/gpu.shared instead of nvidia.com/gpu, so a
    pod asks for a share knowingly; false: shares are nvidia.com/gpu."""
    strategy: MigStrategy | None = None
    """mig: single (every GPU split into one profile, advertised as nvidia.com/gpu) or mixed (a
    layout of profiles, each advertised as nvidia.com/mig-<profile>)."""
    profile: str | None = None
    """mig with strategy single: the profile every GPU is split into, e.g. 1g.10gb."""
    layout: dict[str, Annotated[int, Field(ge=1)]] | None = None
    """mig with strategy mixed: profile -> instances per GPU, e.g. {3g.40gb: 1, 2g.20gb: 1,
    1g.10gb: 2}; it must fit the GPU's 7 compute and 8 memory slices."""


def _default_taints() -> list[Taint]:
    return [Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")]


class PoolSettings(_Settings):
    """The GPU node pool: one managed node group per instance-type entry (and per zone), scaled
    by Cluster Autoscaler; or, with `provisioner: karpenter` or `auto-mode`, one NodePool.

    Defaults are what a careful operator sets: scale from zero (min 0, desired 0, max 8), on-demand
    capacity, a 200 GiB root disk for CUDA images, and a taint so only GPU work lands on the pool.
    """

    name: PoolName = "gpu"
    """Unique per cluster; nodes carry it as the label gpu-pool.io/pool. In `pools`, the key."""
    provisioner: Provisioner = "cluster-autoscaler"
    """What launches the pool's nodes: managed node groups scaled by Cluster Autoscaler, a
    Karpenter NodePool, or an EKS Auto Mode NodePool (docs/provisioners.md)."""
    instance_types: list[str | list[str]] = Field(
        default_factory=lambda: list[str | list[str]](["g5.xlarge"])
    )
    """Each entry is one node group: an instance type, or a list of interchangeable types with the
    same GPU count (for Spot diversity)."""
    zones: list[str] = Field(default_factory=list)
    """Empty: one node group per entry across the cluster's subnets, whose zones must all offer
    its types (EKS refuses a node group with a subnet in a zone that lacks one). Otherwise one
    per entry per zone; a Local Zone (us-east-1-dfw-2a) gets a node-only subnet
    (docs/training.md#local-zones)."""
    ami_family: AmiFamily = "AL2023"
    """AL2023 or BOTTLEROCKET; the NVIDIA AMI type follows from it."""
    ami_type: NvidiaAmiType | None = None
    """Normally derived from ami_family and the instance type's architecture."""
    ami_release_version: str | None = matching(
        r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9A-Za-z]+$",
        "an EKS AMI release version such as 1.36.2-20261120",
        default=None,
    )
    """Pin the node AMI release (e.g. 1.35.2-20261120); None: the newest for the node group's
    Kubernetes version when it is created. Changing it rolls the nodes (respecting PDBs)."""
    capacity_type: Literal["ON_DEMAND", "SPOT"] = "ON_DEMAND"
    """ON_DEMAND or SPOT."""
    min_size: int = 0
    """Nodes each group keeps while idle; 0 lets the pool scale to zero."""
    desired_size: int = 0
    """Nodes each group starts with when created; never pushed again (the autoscaler owns it).
    Unset: min_size, so a pool that keeps nodes starts with them."""
    max_size: int = 8
    """Most nodes per node group (a Karpenter pool's node limit)."""

    @model_validator(mode="before")
    @classmethod
    def _desired_follows_min(cls, data: object) -> object:
        """An unset desired_size is min_size (only a valid one: a bad min_size is reported once)."""
        if not isinstance(data, dict) or "desired_size" in data:
            return data
        min_size = data.get("min_size")
        if type(min_size) is int and min_size > 0:
            return {**data, "desired_size": min_size}
        return data

    disk_size_gib: int = 200
    """The node volume that holds container images, in GiB (gp3, encrypted)."""
    volume_kms_key_arn: str | None = matching(
        r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key|alias)/",
        "a KMS key or alias ARN",
        default=None,
    )
    """The nodes' gp3 volume is always encrypted; None: with the account's default EBS key."""
    imds_hop_limit: int = Field(default=1, ge=1, le=64)
    """IMDSv2 is required; hop limit 1 keeps pods (one hop further) from the node's credentials.
    Raise it only for a workload that must read instance metadata."""
    labels: dict[str, str] = Field(
        default_factory=lambda: {"accelerator": "nvidia", "workload": "inference"}
    )
    """Node labels a workload may select (gpu-pool adds its own)."""
    taints: list[Taint] = Field(default_factory=_default_taints)
    """Node taints; the default keeps pods that do not ask for GPUs off the pool."""
    gpu_software: GpuSoftware | None = None
    """What advertises the GPUs. None: device plugin on AL2023, none on Bottlerocket (its AMI has
    one), gpu-operator on UltraServers (EKS's guide). dra-driver: the NVIDIA DRA driver allocates
    them as ResourceClaims; Kubernetes 1.34+, AL2023, no sharing (docs/dra-and-ultraservers.md)."""
    compute_domains: Literal["dra-driver", "none"] | None = None
    """Multi-node NVLink by the DRA driver's ComputeDomains; None: dra-driver on UltraServers."""
    instance_store: Literal["raid0", "none"] | None = None
    """raid0: NVMe instance store striped for kubelet and images; None: raid0 on UltraServers."""
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    """GPU Operator components, with gpu_software: gpu-operator."""
    versions: ChartVersions = ChartVersions()
    """Overrides for the pinned chart versions."""
    karpenter: KarpenterPoolSettings = KarpenterPoolSettings()
    """The NodePool's disruption and limits, with provisioner: karpenter or auto-mode."""
    sharing: SharingSettings = SharingSettings()
    """How pods share the pool's GPUs: none (default), time-slicing or mig."""
    capacity_reservation: CapacityReservationSettings | None = None
    """Reserved capacity (an ODCR or a Capacity Block for ML) the nodes launch into; None: on
    demand or Spot as capacity_type says (docs/training.md)."""
    efa: bool = False
    """Elastic Fabric Adapter: one EFA interface per network card, a security group open within
    the pool and, outside reserved capacity, a cluster placement group of its own; needs one
    zone and an EFA type (docs/training.md)."""
    efa_software: Literal["device-plugin", "dra-driver"] = "device-plugin"
    """What advertises the EFA interfaces, with efa: the EFA device plugin, or the EFA DRA
    driver (aws-dranet; Kubernetes 1.34+, node groups; docs/dra-and-ultraservers.md)."""
    repair: RepairSettings = RepairSettings()
    """Node repair of the pool's unhealthy nodes: on by default (docs/gpu-health.md)."""
