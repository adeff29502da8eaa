"""What an existing cluster is, as its lookup answers (gpu_pool/lookups/eks_cluster.py through the
project's CDK CLI plugin, cached in cdk.context.json), and the settings the app builds from it:
each field of `cluster.existing` set by hand wins, the cluster's Kubernetes version always does
(EKS refuses a node group newer than its control plane: EKS user guide, "Update a managed node
group for your cluster").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_pool.plan.cluster import placeholder_zones
from gpu_pool.settings import AppSettings, ExistingClusterSettings

# The lookup's plugin provider name (cdk-plugin/index.js registers it).
CLUSTER_PLUGIN = "gpu-pool-eks-cluster"
# The add-ons the app reads the answer for (EKS add-on names).
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
NODE_MONITORING_AGENT = "eks-node-monitoring-agent"
# The tag every add-on gpu-pool creates carries, its value the creating stack's name, so that a
# later lookup of the cluster tells the add-ons a stack made from the cluster's own: taken as the
# cluster's, the stack's agents would stop being created, and CloudFormation would delete them;
# another stack's (a second stack on the cluster, or the stack that created the cluster) are
# the cluster's for this one, which creating them again would fail (ResourceInUseException).
ADDON_OWNER_TAG = "gpu-pool.io/created-by"
# The value every stack wrote before the tag named the stack: such an add-on stays with the
# stack that reads it, as it did then (one stack on a cluster was all that worked).
LEGACY_ADDON_OWNER = "gpu-pool"
# DescribeCluster accessConfig.authenticationMode that has no access entries (EKS API
# Reference, AccessConfigResponse: API | API_AND_CONFIG_MAP | CONFIG_MAP).
CONFIG_MAP_ONLY = "CONFIG_MAP"
# Placeholders of a cluster not looked up yet: never an id AWS gives (8 zero digits), so a
# template built on them is one the deploy guard holds (cdk/lookups/context.py).
PLACEHOLDER_SUBNET = "subnet-{:08x}"
PLACEHOLDER_SECURITY_GROUP = "sg-00000000"


# EKS's publicAccessCidrs where the public endpoint is open to every address.
OPEN_TO_ALL = "0.0.0.0/0"


@dataclass(frozen=True)
class ClusterFacts:
    """An existing cluster as DescribeCluster, ListAddons and DescribeSubnets answer it."""

    name: str
    version: str
    vpc_id: str
    private_subnets: Mapping[str, tuple[str, ...]]
    """The cluster's subnets without a route to an internet gateway, by zone."""
    cluster_security_group_id: str
    public_endpoint: bool
    private_endpoint: bool
    authentication_mode: str
    addons: frozenset[str]
    """The add-ons in the cluster that the reading stack did not create: the stack must not
    create these (another gpu-pool stack's count, addon_owners)."""
    public_access_cidrs: tuple[str, ...] = (OPEN_TO_ALL,)
    """Where the public endpoint answers from (an answer cached before it was read: open)."""
    isolated_subnets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Of private_subnets, those without any default route: no NAT, no transit gateway."""
    auto_mode: bool = False
    """DescribeCluster computeConfig.enabled."""
    addon_owners: Mapping[str, str] = field(default_factory=dict)
    """Add-on -> the gpu-pool stack that created it (its ADDON_OWNER_TAG value)."""
    placeholder: bool = False
    """True: not looked up; the stack is built on these and its deploy is held."""

    @property
    def private_only(self) -> bool:
        """Whether the Kubernetes API answers only inside the cluster's VPC."""
        return self.private_endpoint and not self.public_endpoint

    @property
    def public_access_limited(self) -> bool:
        """Whether the public endpoint answers only some addresses (publicAccessCidrs), which
        a Lambda function outside a VPC, calling from AWS's own addresses, is not among."""
        return self.public_endpoint and OPEN_TO_ALL not in self.public_access_cidrs

    @property
    def kubectl_in_vpc(self) -> bool:
        """Whether the stack's kubectl handler runs in the cluster's VPC: wherever private
        access is on, as aws-cdk-lib does for its own clusters (aws-eks-v2 cluster.ts: the
        kubectl provider gets the private subnets when `endpointAccess` has private access),
        and where the public endpoint is limited to some addresses, which only the VPC's
        NAT addresses can be (docs/existing-clusters.md, "Where the kubectl handler runs")."""
        return self.private_endpoint or self.public_access_limited

    def node_subnets(self) -> dict[str, list[str]]:
        """Where node groups go, by zone: the private subnets that reach out (a NAT, a transit
        gateway) where the zone has any, else its isolated ones (checks/existing_cluster.py
        warns: only VPC endpoints reach ECR, STS and EKS from there)."""
        chosen = {}
        for zone, ids in self.private_subnets.items():
            isolated = set(self.isolated_subnets.get(zone, ()))
            reaching = [i for i in ids if i not in isolated]
            chosen[zone] = reaching or list(ids)
        return chosen

    @classmethod
    def from_answer(cls, answer: Mapping[str, Any], stack_name: str) -> ClusterFacts:
        """The lookup's cached answer (gpu_pool/lookups/eks_cluster.py writes it) as the stack
        named `stack_name` reads it: the add-ons it created itself (ADDON_OWNER_TAG; before the
        tag named a stack, any gpu-pool stack's) are its own, not the cluster's. The keys a
        lookup by an older gpu-pool did not write take what that gpu-pool assumed."""
        owners = dict(answer.get("addonOwners", {}))
        own = {stack_name, LEGACY_ADDON_OWNER}
        return cls(
            name=answer["name"],
            version=answer["version"],
            vpc_id=answer["vpcId"],
            private_subnets=_by_zone(answer["privateSubnets"]),
            cluster_security_group_id=answer["clusterSecurityGroupId"],
            public_endpoint=answer["endpointPublicAccess"],
            private_endpoint=answer["endpointPrivateAccess"],
            authentication_mode=answer["authenticationMode"],
            addons=frozenset(a for a in answer["addons"] if owners.get(a) not in own),
            public_access_cidrs=tuple(answer.get("publicAccessCidrs", [OPEN_TO_ALL])),
            isolated_subnets=_by_zone(answer.get("isolatedSubnets", {})),
            auto_mode=bool(answer.get("autoMode", False)),
            addon_owners=owners,
        )


def _by_zone(subnets: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    return {zone: tuple(ids) for zone, ids in subnets.items()}


def placeholder_facts(settings: AppSettings) -> ClusterFacts:
    """What the stack is built on while its cluster is not looked up: the settings' Kubernetes
    version, a placeholder subnet in each zone the pools name (else the Region's `a` zone), a
    public endpoint that allows access entries, and no add-on."""
    zones = placeholder_zones(settings) or [f"{settings.region}a"]
    return ClusterFacts(
        name=settings.cluster.name,
        version=settings.cluster.kubernetes_version,
        vpc_id="vpc-00000000",
        private_subnets={z: (PLACEHOLDER_SUBNET.format(i),) for i, z in enumerate(zones)},
        cluster_security_group_id=PLACEHOLDER_SECURITY_GROUP,
        public_endpoint=True,
        private_endpoint=True,
        authentication_mode="API_AND_CONFIG_MAP",
        addons=frozenset(),
        placeholder=True,
    )


def with_cluster_facts(settings: AppSettings, facts: ClusterFacts) -> AppSettings:
    """`settings` with what `cluster.existing` leaves unset taken from the cluster: its node
    subnets, its cluster security group, whether each agent add-on must be created; and its
    Kubernetes version."""
    existing = settings.cluster.existing
    if existing is None:
        return settings
    filled = existing.model_copy(
        update={
            "subnets_by_zone": existing.subnets_by_zone or facts.node_subnets(),
            "cluster_security_group_id": existing.cluster_security_group_id
            or facts.cluster_security_group_id,
            "node_monitoring_agent": _create_unless_installed(
                existing.node_monitoring_agent, NODE_MONITORING_AGENT, facts.addons
            ),
            "pod_identity_agent": _create_unless_installed(
                existing.pod_identity_agent, POD_IDENTITY_AGENT, facts.addons
            ),
        }
    )
    cluster = settings.cluster.model_copy(
        update={"existing": filled, "kubernetes_version": facts.version}
    )
    return settings.model_copy(update={"cluster": cluster})


def _create_unless_installed(chosen: bool | None, addon: str, installed: frozenset[str]) -> bool:
    """An agent's setting: as set, else create it where the cluster lacks the add-on."""
    return chosen if chosen is not None else addon not in installed


def cluster_context_key(account: str, region: str, name: str) -> str:
    """The cdk.context.json key under which the CDK CLI caches the cluster's lookup: the CDK's
    key form for provider `plugin` (aws-cdk-lib ContextProvider.getKey: the provider, then its
    props sorted by name), which the `gpu-pool` command reads without the CDK."""
    return (
        f"plugin:account={account}:clusterName={name}:pluginName={CLUSTER_PLUGIN}:region={region}"
    )


def needs_lookup(existing: ExistingClusterSettings) -> bool:
    """Whether the settings leave a fact only the lookup gives: the subnets, or the endpoint
    and authentication mode the stack's own kubectl provider needs."""
    return not existing.subnets_by_zone or existing.own_kubectl_provider
