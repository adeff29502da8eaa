"""AutoModeNodePool: a GPU pool whose nodes EKS Auto Mode launches for pending GPU pods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.arguments import auto_mode_compute, require_kubectl
from gpu_pool.cdk.auto_mode.cluster_role import (
    allow_node_class_tags,
    allow_volume_key,
    cluster_role_policy,
    created_cluster_role,
)
from gpu_pool.cdk.nag.acknowledge import acknowledge_managed_policies
from gpu_pool.cdk.network.placement import subnets_by_zone
from gpu_pool.cdk.pool import PoolConstruct
from gpu_pool.cdk.registry import ClusterPools, EksCluster, as_icluster
from gpu_pool.cdk.report import names_itself, report, warn
from gpu_pool.checks.auto_mode import check_cluster_role
from gpu_pool.checks.library import check_auto_mode_compute
from gpu_pool.model.auto_mode_api import AUTO_NODE_ACCESS_POLICY, NODE_ROLE_POLICIES
from gpu_pool.plan.pool import PoolPlan, plan_pool
from gpu_pool.settings import ConfigError, PoolSettings


class AutoModeNodePool(PoolConstruct):
    """One GPU pool as an EKS Auto Mode NodePool with its own NodeClass, node role and access
    entry. No device plugin: Auto Mode runs the NVIDIA driver and plugin itself.

    The cluster must have Auto Mode compute enabled (a new GpuPoolStack cluster does when a
    pool uses it; see docs/provisioners.md for an existing one): an eks.Cluster without it is a
    ConfigError, an imported cluster (whose configuration the synth cannot see) a warning.
    Settings are checked as the other pools' are, plus Auto Mode's rules; errors raise
    ConfigError.

    :param cluster: the EKS cluster, with Auto Mode compute enabled.
    :param subnets: private subnets for the nodes; with `settings.zones`, some in each zone.
    :param settings: the pool's settings (provisioner: auto-mode) or plan.
    :param security_group_id: the group the nodes join. Default: the eks.Cluster's cluster group.
    :param tags: AWS tags on the instances and the pool's resources. Default: none.

    Auto Mode launches the nodes as the cluster role, whose managed policy allows EKS's own
    tags only. On a cluster the app creates, the NodeClass also tags the instances
    `gpu-pool.io/pool: <name>`, and that role is given the EKS user guide's statement for
    NodeClass tags and the use of a `volume_kms_key_arn` key. Another cluster's role is not the
    app's to change: there the NodeClass carries only `tags`, and a warning says what the role
    needs for them and for the key (docs/provisioners.md).

    What other constructs use: `node_pool`, `node_class`, `node_role`,
    `workload_node_selector`, `workload_tolerations`, `cluster_role_policy` (None where the app
    grants nothing) and `plan`.
    """

    @names_itself
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: EksCluster,
        subnets: Sequence[ec2.ISubnet],
        settings: PoolSettings | PoolPlan,
        security_group_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        plan = settings if isinstance(settings, PoolPlan) else plan_pool(settings)
        if plan.auto_mode is None:
            raise ConfigError(
                f"{plan.setting}.provisioner: '{plan.provisioner}'; AutoModeNodePool renders "
                "pools with provisioner: auto-mode"
            )
        if security_group_id is None:
            if not isinstance(cluster, eks.Cluster):
                raise ConfigError(
                    f"{plan.setting}: AutoModeNodePool needs security_group_id for an imported "
                    "cluster (its cluster security group: aws eks describe-cluster, "
                    "resourcesVpcConfig.clusterSecurityGroupId)"
                )
            security_group_id = cluster.cluster_security_group_id
        icluster = as_icluster(cluster)
        require_kubectl(icluster, "the pool's NodePool and NodeClass")
        super().__init__(scope, construct_id, cluster=icluster, plan=plan)
        if not ClusterPools.of(icluster).settings_checked:
            report(self, check_auto_mode_compute(auto_mode_compute(icluster)))
        placements = subnets_by_zone(plan.setting, plan.settings.zones, subnets)
        self.node_role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in NODE_ROLE_POLICIES
            ],
        )
        acknowledge_managed_policies(self.node_role)
        # A custom NodeClass's nodes join through an access entry of type EC2 with the Auto
        # Mode node policy (EKS user guide, automode/create-node-class.adoc).
        access_entry = eks.AccessEntry(
            self,
            "NodeAccessEntry",
            cluster=icluster,
            principal=self.node_role.role_arn,
            access_entry_type=eks.AccessEntryType.EC2,
            access_policies=[
                eks.AccessPolicy.from_access_policy_name(
                    AUTO_NODE_ACCESS_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                )
            ],
        )
        cluster_role = created_cluster_role(cluster)
        node_class = plan.auto_mode.node_class(
            role=self.node_role.role_name,
            subnet_ids=[s.subnet_id for group in placements.values() for s in group],
            security_group_ids=[security_group_id],
            tags=dict(tags or {}),
            tag_pool=cluster_role is not None,
        )
        node_class_tags = node_class["spec"]["tags"]
        key_arn = plan.auto_mode.volume_key_arn
        self.cluster_role_policy = (
            cluster_role_policy(cluster, cluster_role)
            if cluster_role is not None and (node_class_tags or key_arn)
            else None
        )
        if self.cluster_role_policy is not None:
            if node_class_tags:
                allow_node_class_tags(self.cluster_role_policy)
            if key_arn:
                allow_volume_key(self.cluster_role_policy, key_arn)
        warn(self, check_cluster_role(plan.auto_mode, node_class_tags, cluster_role is not None))
        self.node_class = eks.KubernetesManifest(
            self, "NodeClass", cluster=icluster, manifest=[node_class]
        )
        self.node_class.node.add_dependency(access_entry)
        # The first launch may follow the NodeClass at once: the role must allow it by then.
        if self.cluster_role_policy is not None:
            self.node_class.node.add_dependency(self.cluster_role_policy)
        self.node_pool = eks.KubernetesManifest(
            self, "NodePool", cluster=icluster, manifest=[plan.auto_mode.node_pool()]
        )
        self.node_pool.node.add_dependency(self.node_class)
        self._finish(icluster, tags)
