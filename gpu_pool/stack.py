"""GpuPoolStack: the app's stack, a GPU pool on a new or an existing EKS cluster."""

from __future__ import annotations

import importlib
import json
from typing import Any, cast

from aws_cdk import CfnOutput, Environment, Fn, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from gpu_pool.autoscaler import ClusterAutoscaler
from gpu_pool.checks import (
    check_app,
    check_node_selector,
    check_zones_known,
    report,
    uses_autoscaler,
    uses_karpenter,
)
from gpu_pool.cluster_pools import ClusterPools
from gpu_pool.karpenter.controller import Karpenter
from gpu_pool.karpenter.node_pool import KarpenterNodePool
from gpu_pool.karpenter.plan import resource_name
from gpu_pool.launch_template import NodeLaunchTemplate
from gpu_pool.nag import (
    acknowledge,
    acknowledge_managed_policies,
    acknowledge_provider_framework,
)
from gpu_pool.node_pool import GpuNodePool
from gpu_pool.plan import PoolPlan, pascal_case, plan_pools
from gpu_pool.settings import AppSettings, ClusterSettings, ExistingClusterSettings
from gpu_pool.versions import KUBERNETES_RELEASES

# Label on the system node group; the autoscaler selects it.
SYSTEM_NODE_LABEL = ("gpu-pool.io/role", "system")
_CONTROL_PLANE_LOGS = {
    "api": eks.ClusterLoggingTypes.API,
    "audit": eks.ClusterLoggingTypes.AUDIT,
    "authenticator": eks.ClusterLoggingTypes.AUTHENTICATOR,
    "controllerManager": eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    "scheduler": eks.ClusterLoggingTypes.SCHEDULER,
}
# aws-cdk-lib's default node group disk; the system nodes hold only small add-on images.
SYSTEM_DISK_GIB = 20


class GpuPoolStack(Stack):
    """GPU pools and their cluster, from AppSettings (see README for every key)."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: AppSettings) -> None:
        env = Environment(account=settings.account, region=settings.region)
        super().__init__(scope, construct_id, env=env)
        plans = plan_pools(settings)
        pools = ClusterPools()
        # Every error before anything is built; each pool reports its warnings itself.
        pool_errors = [f for plan in plans for f in pools.add(plan) if f.error]
        # The controllers check their node selectors too; errors must come before building.
        selector_errors = [
            f
            for selector, setting, used in (
                (settings.autoscaler.node_selector, "autoscaler", uses_autoscaler(settings)),
                (settings.karpenter.node_selector, "karpenter", uses_karpenter(settings)),
            )
            if used
            for f in check_node_selector(selector, plans, setting)
        ]
        # Before the lookup is cached the stack's zones are placeholders (dummy1a, ...).
        known_zones = [
            z
            for z in self.availability_zones
            if not Token.is_unresolved(z) and not z.startswith("dummy")
        ]
        report(
            self,
            check_app(settings)
            + check_zones_known(settings, known_zones)
            + pool_errors
            + selector_errors,
        )
        self.settings = settings
        existing = settings.cluster.existing
        self.cluster: eks.ICluster
        if existing is None:
            cluster, subnets = self._new_cluster(settings)
            # jsii classes implement their interfaces at runtime; mypy cannot see it.
            self.cluster = cast(eks.ICluster, cluster)
        else:
            self.cluster, subnets = self._existing_cluster(settings.cluster.name, existing)
        ClusterPools.of(self.cluster, pools)
        # Node groups and their autoscaler first, then Karpenter and its pools: a stack that
        # adds a Karpenter pool keeps the autoscaler's resources (the Pod Identity agent too).
        built: dict[str, GpuNodePool | KarpenterNodePool] = {
            plan.name: self._node_group_pool(plan, subnets)
            for plan in plans
            if plan.karpenter is None
        }
        if uses_autoscaler(settings):
            self.autoscaler = self._autoscaler(settings)
        if uses_karpenter(settings):
            self.karpenter = self._karpenter(settings)
            for plan in plans:
                if plan.karpenter is not None:
                    built[plan.name] = self._karpenter_pool(plan, subnets, self.karpenter)
        self.pools = [built[plan.name] for plan in plans]
        CfnOutput(self, "ClusterName", value=settings.cluster.name)
        acknowledge_managed_policies(self)

    def _node_group_pool(self, plan: PoolPlan, subnets: list[ec2.ISubnet]) -> GpuNodePool:
        construct_id = _pool_construct_id(plan)
        pool = GpuNodePool(
            self,
            construct_id,
            cluster=self.cluster,
            subnets=subnets,
            settings=plan,
            kubernetes_version=self.settings.cluster.kubernetes_version,
        )
        self._outputs(construct_id, plan)
        CfnOutput(
            self,
            f"{construct_id}NodeGroups",
            description=f"pool {plan.name}: its managed node groups",
            value=Fn.join(",", [ng.attr_nodegroup_name for ng in pool.nodegroups]),
        )
        return pool

    def _karpenter_pool(
        self, plan: PoolPlan, subnets: list[ec2.ISubnet], karpenter: Karpenter
    ) -> KarpenterNodePool:
        construct_id = _pool_construct_id(plan)
        pool = KarpenterNodePool(
            self, construct_id, karpenter=karpenter, subnets=subnets, settings=plan
        )
        self._outputs(construct_id, plan)
        CfnOutput(
            self,
            f"{construct_id}NodePool",
            description=f"pool {plan.name}: its Karpenter NodePool",
            value=resource_name(plan.name),
        )
        return pool

    def _outputs(self, construct_id: str, plan: PoolPlan) -> None:
        """What a workload needs to land on the pool."""
        CfnOutput(
            self,
            f"{construct_id}NodeSelector",
            description=f"pool {plan.name}: the nodeSelector that puts a pod on it",
            value=json.dumps(plan.workload_node_selector),
        )
        CfnOutput(
            self,
            f"{construct_id}Tolerations",
            description=f"pool {plan.name}: the tolerations its taints need",
            value=json.dumps(plan.workload_tolerations),
        )

    def _karpenter(self, settings: AppSettings) -> Karpenter:
        existing = settings.cluster.existing
        return Karpenter(
            self,
            "Karpenter",
            cluster=self.cluster,
            settings=settings.karpenter,
            kubernetes_version=settings.cluster.kubernetes_version,
            node_selector=self._controller_node_selector(settings.karpenter.node_selector),
            cluster_security_group_id=existing.cluster_security_group_id if existing else None,
        )

    def _autoscaler(self, settings: AppSettings) -> ClusterAutoscaler:
        return ClusterAutoscaler(
            self,
            "ClusterAutoscaler",
            cluster=self.cluster,
            settings=settings.autoscaler,
            kubernetes_version=settings.cluster.kubernetes_version,
            node_selector=self._controller_node_selector(settings.autoscaler.node_selector),
        )

    def _controller_node_selector(self, selector: dict[str, str]) -> dict[str, str]:
        """Where a controller (the autoscaler, Karpenter) runs: its setting, or if that is
        empty the system node group of a new cluster; on an existing cluster, none (any
        untainted node its chart allows)."""
        if selector or self.settings.cluster.existing is not None:
            return selector
        return dict([SYSTEM_NODE_LABEL])

    def _new_cluster(self, settings: AppSettings) -> tuple[eks.Cluster, list[ec2.ISubnet]]:
        cluster_settings = settings.cluster
        # Every zone a pool names, in order of first mention.
        zones = list(dict.fromkeys(z for _, pool in settings.pool_settings() for z in pool.zones))
        vpc = ec2.Vpc(
            self,
            "Vpc",
            nat_gateways=cluster_settings.nat_gateways,
            # Listed zones are created as named; otherwise up to 3 (2 in an env-agnostic stack).
            availability_zones=zones or None,
            max_azs=None if zones else 3,
        )
        # Flow metadata (not traffic) for audits, kept a month to bound its cost.
        vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(
                logs.LogGroup(self, "VpcFlowLogs", retention=logs.RetentionDays.ONE_MONTH)
            ),
        )
        # EKS writes control-plane logs to this group; created first, it keeps them for the
        # configured retention instead of forever.
        control_plane_logs = logs.CfnLogGroup(
            self,
            "ControlPlaneLogs",
            log_group_name=f"/aws/eks/{cluster_settings.name}/cluster",
            retention_in_days=cluster_settings.logging.retention_days,
        )
        cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=cluster_settings.name,
            endpoint_access=_endpoint_access(cluster_settings),
            cluster_logging=[_CONTROL_PLANE_LOGS[t] for t in cluster_settings.logging.types],
            version=eks.KubernetesVersion.of(cluster_settings.kubernetes_version),
            vpc=vpc,
            vpc_subnets=[ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)],
            # No Auto Mode and no default nodes: the system group below is sized by settings.
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=_kubectl_layer(self, cluster_settings)
            ),
        )
        cluster.node.add_dependency(control_plane_logs)
        _add_system_nodes(cluster, cluster_settings)
        _acknowledge_kubectl_provider(cluster)
        if _open_to_the_internet(cluster_settings):
            acknowledge(
                cluster,
                "GpuPool-EKSPublicEndpoint",
                "cluster.public_access_cidrs is 0.0.0.0/0 (the default, so kubectl and gpu-pool "
                "verify work from anywhere; requests still need IAM credentials mapped to the "
                "cluster): set your own ranges, or endpoint_access: private",
                plugin="GpuPool",
            )
        return cluster, list(vpc.private_subnets)

    def _existing_cluster(
        self, name: str, existing: ExistingClusterSettings
    ) -> tuple[eks.ICluster, list[ec2.ISubnet]]:
        provider = eks.KubectlProvider.from_kubectl_provider_attributes(
            self,
            "KubectlProvider",
            service_token=existing.kubectl_provider_service_token,
            role=iam.Role.from_role_arn(
                self, "KubectlRole", existing.kubectl_provider_role_arn, mutable=False
            ),
        )
        cluster = eks.Cluster.from_cluster_attributes(
            self, "Cluster", cluster_name=name, kubectl_provider=provider
        )
        subnets = [
            ec2.Subnet.from_subnet_attributes(
                self, f"Subnet-{subnet_id}", subnet_id=subnet_id, availability_zone=zone
            )
            for zone, subnet_ids in existing.subnets_by_zone.items()
            for subnet_id in subnet_ids
        ]
        return cluster, subnets


def _pool_construct_id(plan: PoolPlan) -> str:
    """The one-pool form keeps the construct id it always had: a new id would change every
    logical id and replace the deployed node groups."""
    return "GpuPool" if plan.setting == "pool" else f"GpuPool{pascal_case(plan.name)}"


def _endpoint_access(cluster_settings: ClusterSettings) -> eks.EndpointAccess:
    """check_app has refused CIDRs with a private endpoint and narrowed ones with a public-only
    endpoint (whose nodes reach it from the internet)."""
    if cluster_settings.endpoint_access == "private":
        return eks.EndpointAccess.PRIVATE
    if cluster_settings.endpoint_access == "public":
        return eks.EndpointAccess.PUBLIC
    return eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*cluster_settings.public_access_cidrs)


def _open_to_the_internet(cluster_settings: ClusterSettings) -> bool:
    return (
        cluster_settings.endpoint_access != "private"
        and "0.0.0.0/0" in cluster_settings.public_access_cidrs
    )


def _kubectl_layer(scope: Construct, cluster_settings: ClusterSettings) -> Any:
    """The kubectl layer whose minor matches the cluster (imported lazily: each is ~35 MB)."""
    release = KUBERNETES_RELEASES[cluster_settings.kubernetes_version]
    module = importlib.import_module(release.kubectl_layer_module)
    return getattr(module, release.kubectl_layer_class)(scope, "KubectlLayer")


def _add_system_nodes(cluster: eks.Cluster, cluster_settings: ClusterSettings) -> None:
    system = cluster_settings.system_nodes
    instance_type = ec2.InstanceType(system.instance_type)
    arm = instance_type.architecture == ec2.InstanceArchitecture.ARM_64
    template = NodeLaunchTemplate(
        cluster,
        "SystemNodesLaunchTemplate",
        ami_family="AL2023",
        disk_size_gib=SYSTEM_DISK_GIB,
        kms_key_arn=None,
        imds_hop_limit=1,
    )
    nodegroup = cluster.add_nodegroup_capacity(
        "SystemNodes",
        launch_template_spec=eks.LaunchTemplateSpec(id=template.id, version=template.version),
        instance_types=[instance_type],
        ami_type=eks.NodegroupAmiType.AL2023_ARM_64_STANDARD
        if arm
        else eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
        min_size=system.min_size,
        desired_size=system.desired_size,
        max_size=system.max_size,
        labels=dict([SYSTEM_NODE_LABEL]),
        subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        # Upgrades wait for PodDisruptionBudgets (the autoscaler's, CoreDNS's) instead of
        # evicting through them.
        force_update=False,
    )
    # aws-cdk-lib's Nodegroup has no Version prop; without one the group stays on its first
    # minor when the cluster is upgraded.
    resource = nodegroup.node.default_child
    if isinstance(resource, eks.CfnNodegroup):
        resource.version = cluster_settings.kubernetes_version


def _acknowledge_kubectl_provider(cluster: eks.Cluster) -> None:
    provider = cluster.node.find_child("KubectlProvider")
    framework = provider.node.find_child("Provider").node.find_child("framework-onEvent")
    acknowledge_provider_framework(provider, framework, "The kubectl provider")
