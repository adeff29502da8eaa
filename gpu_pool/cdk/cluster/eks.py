"""The EKS cluster a GpuPoolStack creates for its pools, with its VPC, logs and system nodes
(an existing one is imported.py's)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from gpu_pool.cdk.auto_mode.guard import guard_auto_mode
from gpu_pool.cdk.nag.acknowledge import (
    acknowledge,
    acknowledge_managed_policies,
    acknowledge_provider_framework,
)
from gpu_pool.cdk.network.local_zones import local_zone_subnets
from gpu_pool.cdk.nodegroups.launch_template import NodeLaunchTemplate
from gpu_pool.model.versions import KUBERNETES_RELEASES
from gpu_pool.plan.cluster import (
    auto_mode_enabled,
    cluster_zones,
    local_zones,
    placeholder_zones,
)
from gpu_pool.settings import AppSettings, ClusterSettings

# Label on the system node group; the controllers (autoscaler, Karpenter) select it.
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


def new_cluster(
    stack: Stack, settings: AppSettings, known_zones: Sequence[str]
) -> tuple[eks.Cluster, list[ec2.ISubnet]]:
    """The VPC, its flow log, the control-plane log group, the cluster with its kubectl
    layer, and the system node group; with the private subnets GPU nodes go into (the
    cluster's, and a node-only one in each Local Zone a pool names).
    `known_zones`: the region's zones from the cached lookup (empty: not looked up)."""
    cluster_settings = settings.cluster
    # The cluster's own zones; pools choose among them and never change them.
    zones = cluster_zones(settings, known_zones) or placeholder_zones(settings) or None
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        nat_gateways=cluster_settings.nat_gateways,
        # Listed zones are created as named; otherwise the CDK's first 3 (2 in an
        # env-agnostic stack), what a stack whose pools named no zones always had.
        availability_zones=zones,
        max_azs=None if zones else 3,
    )
    # Flow metadata (not traffic) for audits, kept a month to bound its cost.
    vpc.add_flow_log(
        "FlowLog",
        destination=ec2.FlowLogDestination.to_cloud_watch_logs(
            logs.LogGroup(stack, "VpcFlowLogs", retention=logs.RetentionDays.ONE_MONTH)
        ),
    )
    # EKS writes control-plane logs to this group; created first, it keeps them for the
    # configured retention instead of forever.
    control_plane_logs = logs.CfnLogGroup(
        stack,
        "ControlPlaneLogs",
        log_group_name=f"/aws/eks/{cluster_settings.name}/cluster",
        retention_in_days=cluster_settings.logging.retention_days,
    )
    auto_mode = auto_mode_enabled(settings)
    cluster = eks.Cluster(
        stack,
        "Cluster",
        cluster_name=cluster_settings.name,
        endpoint_access=_endpoint_access(cluster_settings),
        cluster_logging=[_CONTROL_PLANE_LOGS[t] for t in cluster_settings.logging.types],
        version=eks.KubernetesVersion.of(cluster_settings.kubernetes_version),
        vpc=vpc,
        vpc_subnets=[ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)],
        kubectl_provider_options=eks.KubectlProviderOptions(
            kubectl_layer=kubectl_layer(stack, cluster_settings)
        ),
        **_capacity(auto_mode),
    )
    cluster.node.add_dependency(control_plane_logs)
    guard_auto_mode(
        cluster,
        name=cluster_settings.name,
        enabled=auto_mode,
        turn_off_confirmed=cluster_settings.auto_mode is False,
    )
    _add_system_nodes(cluster, cluster_settings)
    acknowledge_kubectl_provider(cluster.node.find_child("KubectlProvider"))
    # aws-cdk-lib's roles under the cluster: its own, the kubectl provider's, the system group's.
    acknowledge_managed_policies(cluster)
    if _open_to_the_internet(cluster_settings):
        acknowledge(
            cluster,
            "GpuPool-EKSPublicEndpoint",
            "cluster.public_access_cidrs is 0.0.0.0/0 (the default, so kubectl and gpu-pool "
            "verify work from anywhere; requests still need IAM credentials mapped to the "
            "cluster): set your own ranges, or endpoint_access: private",
            plugin="GpuPool",
        )
    return cluster, list(vpc.private_subnets) + local_zone_subnets(
        stack, vpc, local_zones(settings)
    )


def _capacity(auto_mode: bool) -> dict[str, Any]:
    """No default nodes: the system group below is sized by settings and runs the controllers
    and add-ons, whatever the pools use. With Auto Mode (an auto-mode pool, or
    cluster.auto_mode true) the cluster also gets Auto Mode compute, without the built-in node
    pools (each pool brings its NodePool and NodeClass), so Auto Mode launches GPU nodes only
    (EKS user guide, automode/create-node-pool.adoc, "Cluster without built-in node pools").
    Turning it on later updates the cluster in place; turning it off is destructive (EKS user
    guide, automode/auto-disable.adoc), which `gpu-pool replacements` refuses without --yes."""
    if auto_mode:
        return {
            "default_capacity_type": eks.DefaultCapacityType.AUTOMODE,
            "compute": eks.ComputeConfig(node_pools=[]),
        }
    return {"default_capacity_type": eks.DefaultCapacityType.NODEGROUP, "default_capacity": 0}


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


def kubectl_layer(scope: Construct, cluster_settings: ClusterSettings) -> Any:
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


def acknowledge_kubectl_provider(provider: IConstruct) -> None:
    """The provider-framework findings of a kubectl provider the stack builds: a created
    cluster's, or the one an existing cluster gets (cluster/imported.py)."""
    framework = provider.node.find_child("Provider").node.find_child("framework-onEvent")
    acknowledge_provider_framework(provider, framework, "The kubectl provider")
