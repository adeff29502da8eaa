"""GpuNodePool: managed GPU node groups that scale from zero and advertise their GPUs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.arguments import require_kubectl
from gpu_pool.cdk.capacity.efa import efa_network, placement
from gpu_pool.cdk.network.placement import subnets_by_zone
from gpu_pool.cdk.nodegroups.asg_tags import AsgTags
from gpu_pool.cdk.nodegroups.launch_template import NodeLaunchTemplate, add_node_config
from gpu_pool.cdk.nodegroups.provider import NodegroupHandler
from gpu_pool.cdk.nodegroups.scaling import TEMPLATE_SCALING, NodegroupScaling
from gpu_pool.cdk.nodes.node_role import node_role as new_node_role
from gpu_pool.cdk.nodes.volume_key import grant_to_auto_scaling, stack_account
from gpu_pool.cdk.pool import PoolConstruct
from gpu_pool.cdk.registry import (
    ClusterPools,
    EksCluster,
    PlacedNodeGroup,
    as_icluster,
    created_cluster_version,
)
from gpu_pool.cdk.report import names_itself, warn
from gpu_pool.cdk.stacks import check_priority_stacks
from gpu_pool.checks.volume_key import check_key_account
from gpu_pool.plan.instance_store import local_storage_node_config
from gpu_pool.plan.node_group import NodeGroupPlan
from gpu_pool.plan.pool import PoolPlan, plan_pool
from gpu_pool.plan.repair import RepairPlan
from gpu_pool.settings import ConfigError, PoolSettings

# Which construct renders a pool of each other provisioner, for the refusal below.
_CONSTRUCT_OF = {"karpenter": "KarpenterNodePool", "auto-mode": "AutoModeNodePool"}


class GpuNodePool(PoolConstruct):
    """GPU node groups on an EKS cluster, with what makes GPU pods schedule on them.

    Creates one managed node group per instance-type entry (per zone when `settings.zones` is
    set), the Cluster Autoscaler tags on each group's ASG, and the NVIDIA device plugin (or GPU
    Operator) for the pool's nodes only. Settings are checked first, on their own and against
    the other pools on the same cluster: errors raise ConfigError, warnings become CDK warning
    annotations.

    Node groups are AWS::EKS::Nodegroup resources written directly, because aws-cdk-lib's
    Nodegroup rejects current GPU types (p5, p6-b200, g6f, ...) its own list lacks; the GPU
    catalog checks them instead.

    :param cluster: the EKS cluster, with a kubectl provider (for the chart).
    :param subnets: private subnets for the nodes; with `settings.zones`, some in each zone.
    :param settings: the pool's settings or plan. Default: pool `gpu`, g5.xlarge, min 0, max 8.
    :param node_role: the nodes' role. Default: a new role with EKS's node group policies.
    :param tags: AWS tags on the pool's resources, instances and volumes. Default: none.
    :param kubernetes_version: the node groups' minor, e.g. "1.36". Default: the eks.Cluster's.
    :param vpc: the cluster's VPC, for an EFA pool's security group. Default: the eks.Cluster's.
    :param cluster_security_group_id: the group EFA interfaces join. Default: the eks.Cluster's.

    A node role of your own needs EKS's managed node group policies, and an access entry if the
    cluster uses access entries only. With `kubernetes_version` the groups follow the cluster
    on upgrade, one node at a time (PodDisruptionBudgets respected, no surge of GPU
    instances); without one (an imported cluster) a group keeps the minor it was created with.
    An EFA pool on an imported cluster needs `vpc` and `cluster_security_group_id`.

    What other constructs use: `nodegroups`, `node_role`, `asg_names` (deploy-time tokens, one
    per node group), `workload_node_selector` and `workload_tolerations` (what a pod needs to
    land on the pool), and `plan`.
    """

    @names_itself
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: EksCluster,
        subnets: Sequence[ec2.ISubnet],
        settings: PoolSettings | PoolPlan | None = None,
        node_role: iam.IRole | None = None,
        tags: Mapping[str, str] | None = None,
        kubernetes_version: str | None = None,
        vpc: ec2.IVpc | None = None,
        cluster_security_group_id: str | None = None,
    ) -> None:
        plan = settings if isinstance(settings, PoolPlan) else plan_pool(settings or PoolSettings())
        if plan.provisioner != "cluster-autoscaler":
            raise ConfigError(
                f"{plan.setting}.provisioner: '{plan.provisioner}'; GpuNodePool builds node groups "
                "for Cluster Autoscaler: render this pool with "
                f"{_CONSTRUCT_OF[plan.provisioner]}"
            )
        cluster = as_icluster(cluster)
        if plan.chart is not None or plan.efa_chart is not None:
            require_kubectl(cluster, "the pool's GPU software chart")
        self._kubernetes_version = kubernetes_version or created_cluster_version(cluster)
        super().__init__(
            scope,
            construct_id,
            cluster=cluster,
            plan=plan,
            kubernetes_minor=self._kubernetes_version,
        )
        pools = ClusterPools.of(cluster)
        placements = subnets_by_zone(plan.setting, plan.settings.zones, subnets)
        self.node_role: iam.IRole = node_role or new_node_role(self, "NodeRole")
        capacity = plan.capacity
        security_group_ids: list[str] = []
        self.placement_group, placement_group_name = placement(self, plan)
        if capacity.efa:
            efa_group = efa_network(self, self.plan, cluster, vpc, cluster_security_group_id)
            security_group_ids = [
                cluster_security_group_id or cluster.cluster_security_group_id,
                efa_group.attr_group_id,
            ]
        self.launch_template = NodeLaunchTemplate(
            self,
            "LaunchTemplate",
            ami_family=plan.settings.ami_family,
            disk_size_gib=plan.settings.disk_size_gib,
            kms_key_arn=plan.settings.volume_kms_key_arn,
            imds_hop_limit=plan.settings.imds_hop_limit,
            tags=tags,
            capacity=capacity,
            instance_type=plan.entries[0][0].name if capacity.capacity_block else None,
            security_group_ids=security_group_ids,
            placement_group=placement_group_name,
        )
        if plan.instance_store_raid0:
            add_node_config(self.launch_template, local_storage_node_config())
        self.nodegroups: list[eks.CfnNodegroup] = []
        self.asg_names: list[str] = []
        for autoscaler in pools.priority_autoscalers:
            check_priority_stacks(autoscaler, self, cluster)
        key, key_grant = plan.settings.volume_kms_key_arn, None
        if key:
            # The ASG launches as its service-linked role, which needs a grant on the key.
            handler = NodegroupHandler.of_stack(self)
            key_grant = grant_to_auto_scaling(
                self, key, handler.role, handler.provider.service_token
            )
        warn(self, check_key_account(plan, stack_account(self)))
        for group in plan.node_groups:
            nodegroup, asg_tags = self._add_group(cluster, group, placements[group.zone])
            if key_grant is not None:
                nodegroup.node.add_dependency(key_grant)
            self.nodegroups.append(nodegroup)
            self.asg_names.append(asg_tags.asg_name)
            pools.node_groups.append(PlacedNodeGroup(group, asg_tags.asg_name, self, asg_tags))
        self._finish(cluster, tags, [ng.attr_nodegroup_name for ng in self.nodegroups])

    def _add_group(
        self,
        cluster: eks.ICluster,
        group: NodeGroupPlan,
        subnets: Sequence[ec2.ISubnet],
    ) -> tuple[eks.CfnNodegroup, AsgTags]:
        settings, capacity = self.plan.settings, self.plan.capacity
        nodegroup = eks.CfnNodegroup(
            self,
            group.construct_id,
            cluster_name=cluster.cluster_name,
            node_role=self.node_role.role_arn,
            subnets=[s.subnet_id for s in subnets],
            ami_type=group.ami_type,
            # A Capacity Block's one type is in the launch template, never here (EKS UG
            # ml/capacity-blocks-mng).
            instance_types=(
                None if capacity.capacity_block else [t.name for t in group.instance_types]
            ),
            capacity_type=capacity.node_group_capacity_type(settings.capacity_type),
            # The volume size is in the launch template; CloudFormation refuses both.
            launch_template=eks.CfnNodegroup.LaunchTemplateSpecificationProperty(
                id=self.launch_template.id, version=self.launch_template.version
            ),
            release_version=settings.ami_release_version,
            # A constant: NodegroupScaling applies the settings (see scaling.py for why).
            scaling_config=TEMPLATE_SCALING,
            labels=dict(group.labels),
            taints=[t.eks_taint() for t in group.taints],
            version=self._kubernetes_version,
            # Version and AMI updates: one node at a time, drained with PDBs respected; MINIMAL
            # terminates before it launches, so no extra GPU instance is needed (EKS
            # UpdateConfig: "useful ... with hardware accelerators such as GPUs").
            update_config=eks.CfnNodegroup.UpdateConfigProperty(
                max_unavailable=1, update_strategy="MINIMAL"
            ),
            # Not create-only in AWS::EKS::Nodegroup's schema: a change updates the group in
            # place, replacing no node group.
            node_repair_config=_node_repair_config(self.plan.repair),
        )
        NodegroupScaling(
            self,
            f"{group.construct_id}Scaling",
            cluster=cluster,
            nodegroup=nodegroup,
            min_size=settings.min_size,
            max_size=settings.max_size,
            desired_size_on_create=settings.desired_size,
        )
        tags = AsgTags(
            self,
            f"{group.construct_id}AsgTags",
            cluster=cluster,
            nodegroup=nodegroup,
            tags=group.autoscaler_tags(cluster.cluster_name),
        )
        return nodegroup, tags


def _node_repair_config(repair: RepairPlan) -> eks.CfnNodegroup.NodeRepairConfigProperty:
    """The plan's repair as EKS's NodeRepairConfig; Enabled false when off, so a deploy that
    turns it off turns it off on the group."""
    if not repair.enabled:
        return eks.CfnNodegroup.NodeRepairConfigProperty(enabled=False)
    return eks.CfnNodegroup.NodeRepairConfigProperty(
        enabled=True,
        max_unhealthy_node_threshold_count=repair.max_unhealthy_count,
        max_unhealthy_node_threshold_percentage=repair.max_unhealthy_percentage,
        max_parallel_nodes_repaired_count=repair.max_parallel_count,
        max_parallel_nodes_repaired_percentage=repair.max_parallel_percentage,
        node_repair_config_overrides=[
            eks.CfnNodegroup.NodeRepairConfigOverridesProperty(
                node_monitoring_condition=o.condition,
                node_unhealthy_reason=o.reason,
                min_repair_wait_time_mins=o.wait_minutes,
                repair_action=o.action.value,
            )
            for o in repair.overrides
        ]
        or None,
    )
