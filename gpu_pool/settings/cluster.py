"""The cluster's settings: created (version, endpoint, logging, zones, system nodes) or
existing (`cluster.existing`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION
from gpu_pool.settings.base import _Settings
from gpu_pool.settings.errors import matching
from gpu_pool.settings.field_types import (
    InstanceTypeName,
    SubnetId,
)

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
    """An EKS cluster the app does not create, imported by name. What is not set here is looked
    up (DescribeCluster, ListAddons, DescribeSubnets: docs/existing-clusters.md); each field set
    here wins over the lookup."""

    kubectl_provider_service_token: str | None = matching(
        r"^arn:aws[a-z-]*:lambda:", "a Lambda function ARN (arn:aws:lambda:...)", default=None
    )
    """A kubectl provider of your own: its Lambda function ARN (onEvent). None: the stack creates
    its own, with an EKS access entry for its role."""
    kubectl_provider_role_arn: str | None = matching(
        r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/",
        "an IAM role ARN (arn:aws:iam::<account>:role/...)",
        default=None,
    )
    """The role your kubectl provider assumes, mapped to the cluster's administrators; set
    with kubectl_provider_service_token."""
    subnets_by_zone: dict[str, list[SubnetId]] = Field(default_factory=dict)
    """Subnets for the GPU node groups, by zone (a Local Zone's only for pools naming it).
    Empty: the cluster's own private subnets, looked up."""
    cluster_security_group_id: str | None = matching(
        r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$",
        "a security group id (sg- and 8 or 17 hex digits)",
        default=None,
    )
    """The cluster security group EKS created (DescribeCluster:
    resourcesVpcConfig.clusterSecurityGroupId); Karpenter pools put their nodes in it. None:
    looked up."""
    node_monitoring_agent: bool | None = None
    """true: create the EKS add-on eks-node-monitoring-agent, whose node conditions repair acts
    on (the app creates it on its own clusters); false: the cluster has it. None: looked up
    (ListAddons), created where missing; without a lookup, a warning."""
    pod_identity_agent: bool | None = None
    """true: create the EKS add-on eks-pod-identity-agent, which gives the autoscaler and
    Karpenter their credentials; false: create none (the cluster has it, or you install it).
    None: looked up (ListAddons), created where missing; without a lookup, none."""

    @model_validator(mode="after")
    def _provider_in_full(self) -> ExistingClusterSettings:
        """A kubectl provider of one's own is its function and its role, or neither."""
        token, role = self.kubectl_provider_service_token, self.kubectl_provider_role_arn
        if (token is None) != (role is None):
            given, missing = (
                ("kubectl_provider_service_token", "kubectl_provider_role_arn")
                if role is None
                else ("kubectl_provider_role_arn", "kubectl_provider_service_token")
            )
            raise ValueError(
                f"{given} is set without {missing}: set both (a kubectl provider of your own) "
                "or neither (the stack creates its own)"
            )
        return self

    @property
    def own_kubectl_provider(self) -> bool:
        """Whether the stack creates the cluster's kubectl provider (none is given here)."""
        return self.kubectl_provider_service_token is None


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
    cluster by itself: raise it there, on purpose (docs/day2.md). An existing cluster's is looked
    up (DescribeCluster) and wins; until the lookup answers, the stack's placeholders use this
    one (a hand-set cluster, nothing looked up, keeps it)."""
    kubectl_layer_version: str | None = None
    """kubectl layer minor; defaults to the cluster's minor, which is what kubectl needs."""
    zones: list[str] = Field(default_factory=list)
    """The new VPC's Availability Zones (no Local Zone), where the cluster's subnets are (EKS
    needs two or more). Empty: the region's first three Availability Zones in the cached lookup
    (two in an environment-agnostic stack). Pools never change them: a change replaces the
    VPC's subnets, its NAT gateway and every node group (docs/day2.md). A created cluster's
    only, like nat_gateways, endpoint_access, public_access_cidrs, logging and system_nodes:
    set with `existing`, each is an error (GP-APP-18), never silently ignored."""
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
    """Set to use a cluster the app does not create: `true` (everything looked up), or its
    settings."""

    @field_validator("existing", mode="before")
    @classmethod
    def _existing_true(cls, value: Any) -> Any:
        """`existing: true` is the cluster with every fact looked up; false, none. Any other
        value that is not a mapping (`yes`, `"true"`, 1) is refused naming both forms."""
        if value is True:
            return {}
        if value is False:
            return None
        if value is not None and not isinstance(value, dict):
            raise ValueError(
                f"must be true (every fact looked up: docs/existing-clusters.md), false, or a "
                f"mapping of settings such as {{subnets_by_zone: ...}} (got {value!r})"
            )
        return value
