"""Typed settings: the construct's props and the app's configuration, one model for both.

Field types, ranges and unknown keys are checked here, where the settings enter; rules that
span several settings, or need the GPU catalog, live in gpu_pool/checks/.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
    field_validator,
    model_validator,
)

from gpu_pool.model.aws_names import REGION
from gpu_pool.model.findings import RULE_ID
from gpu_pool.model.rule_levels import rule_levels
from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION
from gpu_pool.settings.base import _Settings
from gpu_pool.settings.errors import matching
from gpu_pool.settings.repair import RepairSettings

TaintEffect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]
AmiFamily = Literal["AL2023", "BOTTLEROCKET"]
NvidiaAmiType = Literal[
    "AL2023_x86_64_NVIDIA",
    "AL2023_ARM_64_NVIDIA",
    "BOTTLEROCKET_x86_64_NVIDIA",
    "BOTTLEROCKET_ARM_64_NVIDIA",
]
GpuSoftware = Literal["device-plugin", "gpu-operator", "dra-driver", "none"]
Provisioner = Literal["cluster-autoscaler", "karpenter", "auto-mode"]
SubnetId = Annotated[
    str,
    matching(
        r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", "a subnet id (subnet- and 8 or 17 hex digits)"
    ),
]
# A Go duration as Cluster Autoscaler parses its flags: 10m, 90s, 1m30s, 1.5h.
Duration = Annotated[
    str,
    matching(
        r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$",
        "a duration Cluster Autoscaler takes, such as 10m, 90s or 1m30s",
    ),
]
# family.size with an EC2 size word: t3.medium, m7g.2xlarge, c6i.metal, u-6tb1.metal-24xl.
InstanceTypeName = Annotated[
    str,
    matching(
        r"^[a-z][a-z0-9-]*\.(nano|micro|small|medium|large|xlarge|[0-9]+xlarge|metal"
        r"(-[0-9]+xl)?)$",
        "an EC2 instance type: family.size, e.g. t3.medium (sizes nano, micro, small, medium, "
        "large, xlarge, 2xlarge ... , metal)",
    ),
]
# A pool's name: in its device plugin's Helm release name (helm pkg/chartutil/validate_name.go:
# [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 53 characters, and "nvidia-device-plugin-" takes 21),
# its node label's value (a Kubernetes label value ends in a letter or digit), its Karpenter
# NodePool's name and its construct ids.
PoolName = Annotated[
    str,
    matching(
        r"^[a-z]([a-z0-9-]{0,19}[a-z0-9])?$",
        "a pool name: a lowercase letter, then up to 20 lowercase letters, digits or '-', "
        "ending in a letter or digit (it names a Helm release and is a label value)",
    ),
]


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


# Karpenter's own durations, with its NodePool CRD's patterns (aws/karpenter-provider-aws v1.14.1
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
    """Empty: one node group per entry across the cluster's subnets. Otherwise one per entry per
    zone; a Local Zone (us-east-1-dfw-2a) gets a node-only subnet (docs/training.md#local-zones)."""
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


class AutoscalerSettings(_Settings):
    """Cluster Autoscaler. Scale-down defaults favour cost: GPU nodes are the expensive ones."""

    enabled: bool = True
    """Install Cluster Autoscaler (pools with min 0 never start a node without it)."""
    scale_down_unneeded_time: Duration = "5m"
    """How long a node must be unneeded before it is removed (CA default 10m)."""
    scale_down_delay_after_add: Duration = "5m"
    """Pause after a scale-up before scale-down is considered (CA default 10m)."""
    expander: Literal["priority", "least-waste", "random", "most-pods"] = "priority"
    """priority: among groups that fit a pod, the one with the fewest GPUs per node, then the
    cheaper family (priorities generated from the catalog), then least-waste. least-waste alone
    scores CPU and memory only, so between GPU groups it picks at random."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Where the autoscaler pod runs; empty means the app's system node group (new cluster) or
    anywhere untainted (existing cluster)."""
    chart_version: str | None = None
    """Overrides for the pins in gpu_pool/model/versions.py; the image minor must equal the
    cluster's."""
    image_tag: str | None = None
    """Override for the pinned image tag; its minor must equal the cluster's."""

    @field_validator("expander", mode="before")
    @classmethod
    def _not_price(cls, value: object) -> object:
        if value == "price":
            raise ValueError(
                "'price' makes Cluster Autoscaler exit at start on AWS (its AWS provider has no "
                "pricing); use 'priority', which prefers fewer GPUs, then cheaper families"
            )
        return value


class KarpenterSettings(_Settings):
    """The Karpenter installation, made once per cluster when a pool uses it."""

    chart_version: str | None = None
    """Override for the chart pin in gpu_pool/model/versions.py (both charts share it)."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Where the controller runs; empty means the app's system node group (new cluster) or anywhere
    untainted (existing cluster). Never on the GPU pools."""


GpuMetricsChoice = Literal["none", "dcgm-exporter", "cloudwatch"]


class MetricsSettings(_Settings):
    """GPU metrics for the cluster, opt-in (docs/gpu-sharing.md#gpu-metrics)."""

    gpu: GpuMetricsChoice = "none"
    """none; dcgm-exporter: NVIDIA's exporter (Prometheus format, port 9400) on every GPU node
    whose pool does not use the GPU Operator (which runs its own); cloudwatch: the Amazon
    CloudWatch Observability EKS add-on (Container Insights, GPU metrics included)."""
    service_monitor: bool = False
    """dcgm-exporter: also create its ServiceMonitor, which needs the Prometheus Operator's
    CRDs in the cluster."""


EndpointAccess = Literal["public", "private", "public_and_private"]
ControlPlaneLog = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
# CloudWatch Logs retention periods, in days (PutRetentionPolicy).
RetentionDays = Literal[
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
]
# Each octet 0-255 (EKS refuses the block otherwise, at deploy): the pattern says it.
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
Cidr = Annotated[
    str,
    matching(
        rf"^({_OCTET}\.){{3}}{_OCTET}/([0-9]|[12][0-9]|3[0-2])$",
        "an IPv4 CIDR block such as 203.0.113.0/24",
    ),
]


class ControlPlaneLoggingSettings(_Settings):
    """EKS control-plane logs to CloudWatch Logs. audit: who did what through the API;
    authenticator: which IAM principal each request came from. The others are verbose."""

    types: list[ControlPlaneLog] = Field(
        default_factory=lambda: list[ControlPlaneLog](["audit", "authenticator"])
    )
    """Control-plane log types sent to CloudWatch Logs."""
    retention_days: RetentionDays = 90
    """Days CloudWatch Logs keeps them (a PutRetentionPolicy value)."""


class SystemNodesSettings(_Settings):
    """Small on-demand node group for the autoscaler, CoreDNS and other add-ons."""

    instance_type: InstanceTypeName = "t3.medium"
    """The system nodes' instance type."""
    min_size: int = 1
    """Fewest system nodes."""
    desired_size: int = 2
    """System nodes at creation."""
    max_size: int = 3
    """Most system nodes."""


class ExistingClusterSettings(_Settings):
    """An EKS cluster the app does not create: imported by name with its kubectl provider."""

    kubectl_provider_service_token: str = matching(
        r"^arn:aws[a-z-]*:lambda:", "a Lambda function ARN (arn:aws:lambda:...)"
    )
    """The cluster's kubectl provider: its Lambda function ARN (onEvent)."""
    kubectl_provider_role_arn: str = matching(
        r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/", "an IAM role ARN (arn:aws:iam::<account>:role/...)"
    )
    """The role the kubectl provider assumes, mapped to the cluster's administrators."""
    subnets_by_zone: dict[str, list[SubnetId]] = Field(min_length=1)
    """Subnets for the GPU node groups, by zone (a Local Zone's only for pools naming it)."""
    cluster_security_group_id: str | None = matching(
        r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$",
        "a security group id (sg- and 8 or 17 hex digits)",
        default=None,
    )
    """The cluster security group EKS created (DescribeCluster:
    resourcesVpcConfig.clusterSecurityGroupId); Karpenter pools put their nodes in it."""
    node_monitoring_agent: bool | None = None
    """true: create the EKS add-on eks-node-monitoring-agent, whose node conditions repair acts
    on (the app creates it on its own clusters); false: the cluster has it. None: a warning."""


class ClusterSettings(_Settings):
    """The EKS cluster: created by the app unless `existing` is set."""

    name: str = matching(
        r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$",
        "an EKS cluster name: a letter or digit, then up to 99 letters, digits, '-' or '_'",
        default="gpu-pool",
    )
    """The EKS cluster's name (also of an existing cluster)."""
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    """The cluster's Kubernetes minor, e.g. 1.36; node groups follow it on upgrade. The app's
    cdk.json sets it, so that a gpu-pool release with a newer default never upgrades a deployed
    cluster by itself: raise it there, on purpose (docs/day2.md)."""
    kubectl_layer_version: str | None = None
    """kubectl layer minor; defaults to the cluster's minor, which is what kubectl needs."""
    zones: list[str] = Field(default_factory=list)
    """The new VPC's Availability Zones (no Local Zone), where the cluster's subnets are (EKS
    needs two or more). Empty: the region's first three Availability Zones in the cached lookup
    (two in an environment-agnostic stack). Pools never change them: a change replaces the
    VPC's subnets, its NAT gateway and every node group (docs/day2.md)."""
    auto_mode: bool | None = None
    """EKS Auto Mode compute, block storage and load balancing on the new cluster. None: on
    while some pool uses provisioner auto-mode. true keeps it on with no such pool. Turning it
    off terminates Auto Mode's instances and deletes its load balancers, users' own too, so a
    deploy that would turn it off fails (the cluster's Auto Mode guard) unless this is false."""
    nat_gateways: int = Field(default=1, ge=1, le=3)
    """NAT gateways of the new VPC (1 to 3); more is more available and dearer."""
    endpoint_access: EndpointAccess = "public_and_private"
    """Where the Kubernetes API answers. public_and_private: nodes reach it inside the VPC, and
    kubectl (and gpu-pool verify) from public_access_cidrs; private: only from the VPC."""
    public_access_cidrs: list[Cidr] = Field(default_factory=lambda: ["0.0.0.0/0"], min_length=1)
    """Who may reach a public endpoint. The default, the whole internet, is acknowledged in the
    synth's nag report (GpuPool-EKSPublicEndpoint): narrow it to your ranges."""
    logging: ControlPlaneLoggingSettings = ControlPlaneLoggingSettings()
    """Control-plane log types and their retention."""
    system_nodes: SystemNodesSettings = SystemNodesSettings()
    """The small on-demand node group for controllers and add-ons."""
    existing: ExistingClusterSettings | None = None
    """Set to use a cluster the app does not create."""


def _a_warning(rule: str) -> str:
    """A rule id the app may acknowledge: a gpu-pool rule whose level is warning. Checked on each
    key, so pydantic reports it with every other key's and reason's problem, one line each."""
    level = rule_levels().get(rule)
    if level is None:
        raise ValueError(
            "not a gpu-pool rule; acknowledge a warning by the id the synth prints after it "
            "([ack: gpu-pool:GP-...]; docs/guardrails.md lists them)"
        )
    if level == "error":
        raise ValueError(
            "an error, which cannot be acknowledged (the deploy would not work): change the "
            "setting it names instead"
        )
    return rule


# A warning the app accepts, by its rule id (docs/guardrails.md), and why.
RuleId = Annotated[
    str, matching(RULE_ID.pattern, "a rule id such as GP-POOL-26"), AfterValidator(_a_warning)
]
Reason = Annotated[
    str, matching(r"\S", "a reason: why this app accepts the warning (for the next reader)")
]


# AWS names, each a pattern and what would be valid: every settings model that takes one.
ACCOUNT_ID = (r"^[0-9]{12}$", "a 12-digit AWS account id")
REGION_NAME = (REGION, "an AWS region name such as us-east-1")
STACK_NAME = (
    r"^[A-Za-z][A-Za-z0-9-]{0,127}$",
    "a CloudFormation stack name: a letter, then up to 127 letters, digits or '-'",
)


class AppSettings(_Settings):
    """Everything the app deploys: one file per account/region/cluster."""

    stack_name: str = matching(
        *STACK_NAME,
        default="GpuPool",
    )
    """The CloudFormation stack's name."""
    account: str | None = matching(*ACCOUNT_ID, default=None)
    """Both unset: an environment-agnostic stack (synthesizes without AWS credentials)."""
    region: str | None = matching(*REGION_NAME, default=None)
    """The stack's region; with account, an environment-bound stack (needed for zones)."""
    cluster: ClusterSettings = ClusterSettings()
    """The EKS cluster: created by the app unless cluster.existing is set."""
    pool: PoolSettings | None = None
    """One pool (the original form), or `pools`: pool name -> its settings. Neither: one default
    pool named `gpu`."""
    pools: dict[PoolName, PoolSettings] | None = None
    """Several pools: pool name -> its settings (the key is the name). Not with `pool`."""
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    """Cluster Autoscaler, installed when a pool uses it."""
    karpenter: KarpenterSettings = KarpenterSettings()
    """The Karpenter installation, made when a pool uses it."""
    metrics: MetricsSettings = MetricsSettings()
    """GPU metrics: none (default), dcgm-exporter or cloudwatch."""
    acknowledge: dict[RuleId, Reason] = Field(default_factory=dict)
    """Warnings the app accepts: rule id -> why, e.g. {GP-POOL-26: a warm node for demos}.
    The stack's warnings of that rule are acknowledged with the reason (the CDK's
    acknowledge_warning), so a synth no longer prints them. Warnings only: an error means the
    deploy would not work."""

    @field_validator("pools", mode="before")
    @classmethod
    def _some_pools(cls, value: object) -> object:
        if value == {}:
            raise ValueError(
                "is empty: name at least one pool (name: its settings), or remove `pools` for "
                "the one default pool"
            )
        return value

    @model_validator(mode="after")
    def _one_form_of_pools(self) -> AppSettings:
        if self.pool is not None and self.pools is not None:
            raise ValueError(
                "pool and pools are both set; use `pool` for one pool or `pools` "
                "(name -> settings) for several, not both"
            )
        for name, pool in (self.pools or {}).items():
            if "name" in pool.model_fields_set and pool.name != name:
                raise ValueError(
                    f"pools.{name}.name: '{pool.name}' differs from its key '{name}'; in `pools` "
                    "the key is the name: drop `name`"
                )
        return self

    def pool_settings(self) -> list[tuple[str, PoolSettings]]:
        """Each pool with the setting path its messages name (`pool` or `pools.<name>`)."""
        if self.pools is None:
            return [("pool", self.pool or PoolSettings())]
        return [
            (f"pools.{name}", pool.model_copy(update={"name": name}))
            for name, pool in self.pools.items()
        ]
