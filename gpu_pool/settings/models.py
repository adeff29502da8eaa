"""Typed settings: the construct's props and the app's configuration, one model for both.

Field types, ranges and unknown keys are checked here, where the settings enter; rules that
span several settings, or need the GPU catalog, live in gpu_pool/checks/.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION
from gpu_pool.settings.errors import ConfigError, describe_validation_error, matching


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    def __init__(self, **data: Any) -> None:
        """Construct from keyword settings; a wrong one raises ConfigError, naming it."""
        try:
            super().__init__(**data)
        except ValidationError as err:
            raise ConfigError(describe_validation_error(err, type(self))) from None


TaintEffect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]
AmiFamily = Literal["AL2023", "BOTTLEROCKET"]
NvidiaAmiType = Literal[
    "AL2023_x86_64_NVIDIA",
    "AL2023_ARM_64_NVIDIA",
    "BOTTLEROCKET_x86_64_NVIDIA",
    "BOTTLEROCKET_ARM_64_NVIDIA",
]
GpuSoftware = Literal["device-plugin", "gpu-operator", "none"]
Provisioner = Literal["cluster-autoscaler", "karpenter"]
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
# A pool's name: in its device plugin's release name, its node label and its construct ids.
PoolName = Annotated[
    str,
    matching(
        r"^[a-z][a-z0-9-]{0,20}$",
        "a pool name: a lowercase letter, then up to 20 lowercase letters, digits or '-'",
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
    value: str = Field(default="", max_length=63)
    effect: TaintEffect = "NoSchedule"

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
    toolkit_enabled: bool = False


class ChartVersions(_Settings):
    """Overrides for pinned chart/image versions (defaults: gpu_pool/model/versions.py)."""

    device_plugin: str | None = None
    gpu_operator: str | None = None


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

    # The EC2NodeClass AMI alias, family@version of the pool's ami_family; None: the pin in
    # gpu_pool/model/versions.py. A new version replaces every node of the pool (drift).
    ami_alias: str | None = matching(
        r"^[a-z0-9]+@.+$", "an AMI alias family@version such as al2023@v20260714", default=None
    )
    # How long a node must be empty before Karpenter removes it (Karpenter's default is 0s).
    consolidate_after: KarpenterDurationOrNever = "5m"
    # Maximum node age before it is drained and replaced (Karpenter's default, 30 days); Never:
    # nodes live until emptied, drifted or deleted.
    expire_after: KarpenterDurationOrNever = "720h"
    # How long a draining node (expired, drifted, deleted) waits for its pods, do-not-disrupt and
    # PodDisruptionBudgets included, before deleting them. 24h: a job running when its node
    # expires gets a day to finish, and the node's idle GPUs are billed for at most that long.
    # None: wait as long as they run (upstream advises against it unless expire_after is Never).
    termination_grace_period: KarpenterDuration | None = "24h"
    # The NodePool's nvidia.com/gpu limit; None: max_size nodes of the pool's largest type.
    gpu_limit: int | None = None


def _default_taints() -> list[Taint]:
    return [Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")]


class PoolSettings(_Settings):
    """The GPU node pool: one managed node group per instance-type entry (and per zone), scaled
    by Cluster Autoscaler; or, with `provisioner: karpenter`, one Karpenter NodePool.

    Defaults are what a careful operator sets: scale from zero (min 0, desired 0, max 8), on-demand
    capacity, a 200 GiB root disk for CUDA images, and a taint so only GPU work lands on the pool.
    """

    # Unique per cluster; nodes carry it as the label gpu-pool.io/pool. In `pools`, the key.
    name: PoolName = "gpu"
    # What launches the pool's nodes: managed node groups scaled by Cluster Autoscaler, or a
    # Karpenter NodePool (README: "Choosing a provisioner").
    provisioner: Provisioner = "cluster-autoscaler"
    # Each entry is one node group: an instance type, or a list of interchangeable types with the
    # same GPU count (for Spot diversity).
    instance_types: list[str | list[str]] = Field(
        default_factory=lambda: list[str | list[str]](["g5.xlarge"])
    )
    # Empty: one node group per entry across all subnets. Otherwise one per entry per zone.
    zones: list[str] = Field(default_factory=list)
    ami_family: AmiFamily = "AL2023"
    # Normally derived from ami_family and the instance type's architecture.
    ami_type: NvidiaAmiType | None = None
    # Pin the node AMI release (e.g. 1.35.2-20261120); None: the newest for the node group's
    # Kubernetes version when it is created. Changing it rolls the nodes (respecting PDBs).
    ami_release_version: str | None = matching(
        r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9A-Za-z]+$",
        "an EKS AMI release version such as 1.36.2-20261120",
        default=None,
    )
    capacity_type: Literal["ON_DEMAND", "SPOT"] = "ON_DEMAND"
    min_size: int = 0
    # Nodes each group starts with when created; never pushed again (Cluster Autoscaler owns it).
    desired_size: int = 0
    max_size: int = 8
    disk_size_gib: int = 200
    # The nodes' gp3 volume is always encrypted; None: with the account's default EBS key.
    volume_kms_key_arn: str | None = matching(
        r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key|alias)/",
        "a KMS key or alias ARN",
        default=None,
    )
    # IMDSv2 is required; hop limit 1 keeps pods (one hop further) from the node's credentials.
    # Raise it only for a workload that must read instance metadata.
    imds_hop_limit: int = Field(default=1, ge=1, le=64)
    labels: dict[str, str] = Field(
        default_factory=lambda: {"accelerator": "nvidia", "workload": "inference"}
    )
    taints: list[Taint] = Field(default_factory=_default_taints)
    # None: device plugin on AL2023, nothing on Bottlerocket (its NVIDIA AMI ships the plugin).
    gpu_software: GpuSoftware | None = None
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    versions: ChartVersions = ChartVersions()
    # Used with provisioner: karpenter only.
    karpenter: KarpenterPoolSettings = KarpenterPoolSettings()


class AutoscalerSettings(_Settings):
    """Cluster Autoscaler. Scale-down defaults favour cost: GPU nodes are the expensive ones."""

    enabled: bool = True
    # How long a node must be unneeded before it is removed (CA default 10m).
    scale_down_unneeded_time: Duration = "5m"
    # Pause after a scale-up before scale-down is considered (CA default 10m).
    scale_down_delay_after_add: Duration = "5m"
    # priority: among groups that fit a pod, the one with the fewest GPUs per node, then the
    # cheaper family (priorities generated from the catalog), then least-waste. least-waste
    # alone scores CPU and memory only, so between GPU groups it picks at random.
    expander: Literal["priority", "least-waste", "random", "most-pods"] = "priority"
    # Where the autoscaler pod runs; empty means the app's system node group (new cluster) or
    # anywhere untainted (existing cluster).
    node_selector: dict[str, str] = Field(default_factory=dict)
    # Overrides for the pins in gpu_pool/model/versions.py; the image minor must equal the
    # cluster's.
    chart_version: str | None = None
    image_tag: str | None = None

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

    # Override for the chart pin in gpu_pool/model/versions.py (both charts share it).
    chart_version: str | None = None
    # Where the controller runs; empty means the app's system node group (new cluster) or
    # anywhere untainted (existing cluster). Never on the GPU pools.
    node_selector: dict[str, str] = Field(default_factory=dict)


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
Cidr = Annotated[
    str,
    matching(
        r"^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$",
        "an IPv4 CIDR block such as 203.0.113.0/24",
    ),
]


class ControlPlaneLoggingSettings(_Settings):
    """EKS control-plane logs to CloudWatch Logs. audit: who did what through the API;
    authenticator: which IAM principal each request came from. The others are verbose."""

    types: list[ControlPlaneLog] = Field(
        default_factory=lambda: list[ControlPlaneLog](["audit", "authenticator"])
    )
    retention_days: RetentionDays = 90


class SystemNodesSettings(_Settings):
    """Small on-demand node group for the autoscaler, CoreDNS and other add-ons."""

    instance_type: InstanceTypeName = "t3.medium"
    min_size: int = 1
    desired_size: int = 2
    max_size: int = 3


class ExistingClusterSettings(_Settings):
    """An EKS cluster the app does not create: imported by name with its kubectl provider."""

    kubectl_provider_service_token: str = matching(
        r"^arn:aws[a-z-]*:lambda:", "a Lambda function ARN (arn:aws:lambda:...)"
    )
    kubectl_provider_role_arn: str = matching(
        r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/", "an IAM role ARN (arn:aws:iam::<account>:role/...)"
    )
    # Subnets for the GPU node groups, by availability zone.
    subnets_by_zone: dict[str, list[SubnetId]] = Field(min_length=1)
    # The cluster security group EKS created (DescribeCluster:
    # resourcesVpcConfig.clusterSecurityGroupId); Karpenter pools put their nodes in it.
    cluster_security_group_id: str | None = matching(
        r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$",
        "a security group id (sg- and 8 or 17 hex digits)",
        default=None,
    )


class ClusterSettings(_Settings):
    """The EKS cluster: created by the app unless `existing` is set."""

    name: str = matching(
        r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$",
        "an EKS cluster name: a letter or digit, then up to 99 letters, digits, '-' or '_'",
        default="gpu-pool",
    )
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    # kubectl layer minor; defaults to the cluster's minor, which is what kubectl needs.
    kubectl_layer_version: str | None = None
    nat_gateways: int = Field(default=1, ge=1, le=3)
    # Where the Kubernetes API answers. public_and_private: nodes reach it inside the VPC, and
    # kubectl (and gpu-pool verify) from public_access_cidrs; private: only from the VPC.
    endpoint_access: EndpointAccess = "public_and_private"
    # Who may reach a public endpoint. The default, the whole internet, is acknowledged in the
    # synth's nag report (GpuPool-EKSPublicEndpoint): narrow it to your ranges.
    public_access_cidrs: list[Cidr] = Field(default_factory=lambda: ["0.0.0.0/0"], min_length=1)
    logging: ControlPlaneLoggingSettings = ControlPlaneLoggingSettings()
    system_nodes: SystemNodesSettings = SystemNodesSettings()
    existing: ExistingClusterSettings | None = None


class AppSettings(_Settings):
    """Everything the app deploys: one file per account/region/cluster."""

    stack_name: str = matching(
        r"^[A-Za-z][A-Za-z0-9-]{0,127}$",
        "a CloudFormation stack name: a letter, then up to 127 letters, digits or '-'",
        default="GpuPool",
    )
    # Both unset: an environment-agnostic stack (synthesizes without AWS credentials).
    account: str | None = matching(r"^[0-9]{12}$", "a 12-digit AWS account id", default=None)
    region: str | None = matching(
        r"^[a-z]{2}(-[a-z]+)+-[0-9]$", "an AWS region name such as us-east-1", default=None
    )
    cluster: ClusterSettings = ClusterSettings()
    # One pool (the original form), or `pools`: pool name -> its settings. Neither: one default
    # pool named `gpu`.
    pool: PoolSettings | None = None
    pools: dict[PoolName, PoolSettings] | None = Field(default=None, min_length=1)
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    karpenter: KarpenterSettings = KarpenterSettings()

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
