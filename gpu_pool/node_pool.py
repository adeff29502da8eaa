"""GpuNodePool: managed GPU node groups that scale from zero and advertise their GPUs."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.asg_tags import AsgTags
from gpu_pool.catalog import GpuInstanceType
from gpu_pool.checks import ami_type_for, check_pool, report, resolve_groups
from gpu_pool.gpu_software import install_gpu_software
from gpu_pool.node_template import autoscaler_tags, eks_taints, node_labels
from gpu_pool.settings import ConfigError, PoolSettings

_NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
)


class GpuNodePool(Construct):
    """GPU node groups on an EKS cluster, with what makes GPU pods schedule on them.

    Creates one managed node group per instance-type entry (per zone when `settings.zones` is
    set), the Cluster Autoscaler tags on each group's ASG, and the NVIDIA device plugin (or GPU
    Operator). Settings are checked first: errors raise ConfigError, warnings become CDK
    warning annotations.

    Node groups are AWS::EKS::Nodegroup resources written directly, because aws-cdk-lib's
    Nodegroup rejects current GPU types (p5, p6-b200, g6f, ...) its own list lacks; the GPU
    catalog checks them instead.

    :param cluster: the EKS cluster; needs a kubectl provider for the charts.
    :param subnets: where the GPU nodes go (private subnets). With `settings.zones`, every zone
        needs at least one subnet here and its subnets must carry literal zone names.
    :param settings: the pool's settings; defaults: one g5.xlarge group, min 0, max 8.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        subnets: Sequence[ec2.ISubnet],
        settings: PoolSettings | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.settings = settings = settings or PoolSettings()
        report(self, check_pool(settings))
        groups, _ = resolve_groups(settings)
        self.node_role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in _NODE_POLICIES
            ],
        )
        self.nodegroups: list[eks.CfnNodegroup] = []
        for zone, zone_subnets in _placements(settings.zones, subnets):
            for group in groups:
                self.nodegroups.append(self._add_group(cluster, group, zone, zone_subnets))
        self.gpu_software = install_gpu_software(self, cluster, settings)

    def _add_group(
        self,
        cluster: eks.ICluster,
        group: Sequence[GpuInstanceType],
        zone: str | None,
        subnets: Sequence[ec2.ISubnet],
    ) -> eks.CfnNodegroup:
        settings = self.settings
        cluster_name = cluster.cluster_name
        group_id = _group_id(group[0].name, zone)
        labels = node_labels(settings.labels, group)
        nodegroup = eks.CfnNodegroup(
            self,
            group_id,
            cluster_name=cluster_name,
            node_role=self.node_role.role_arn,
            subnets=[s.subnet_id for s in subnets],
            ami_type=ami_type_for(settings, group[0].architecture),
            instance_types=[t.name for t in group],
            capacity_type=settings.capacity_type,
            disk_size=settings.disk_size_gib,
            scaling_config=eks.CfnNodegroup.ScalingConfigProperty(
                min_size=settings.min_size,
                desired_size=settings.desired_size,
                max_size=settings.max_size,
            ),
            labels=labels,
            taints=eks_taints(settings.taints),
            update_config=eks.CfnNodegroup.UpdateConfigProperty(max_unavailable=1),
        )
        AsgTags(
            self,
            f"{group_id}AsgTags",
            cluster=cluster,
            nodegroup=nodegroup,
            tags=autoscaler_tags(
                cluster_name,
                labels,
                settings.taints,
                group[0].gpu_count,
                settings.disk_size_gib,
            ),
        )
        return nodegroup


def _group_id(instance_type: str, zone: str | None) -> str:
    """Stable construct id: `G5Xlarge`, or `G5XlargeUsEast1a` for a per-zone group."""
    parts = re.split(r"[^A-Za-z0-9]+", instance_type + ("-" + zone if zone else ""))
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def _placements(
    zones: Sequence[str], subnets: Sequence[ec2.ISubnet]
) -> list[tuple[str | None, list[ec2.ISubnet]]]:
    """(zone, subnets) per node group placement: all subnets at once, or one entry per zone."""
    if not subnets:
        raise ConfigError("GpuNodePool: subnets is empty; pass the private subnets for GPU nodes")
    if not zones:
        return [(None, list(subnets))]
    placements: list[tuple[str | None, list[ec2.ISubnet]]] = []
    for zone in zones:
        in_zone = [s for s in subnets if s.availability_zone == zone]
        if not in_zone:
            known = ", ".join(sorted({str(s.availability_zone) for s in subnets}))
            raise ConfigError(
                f"pool.zones: no subnet in {zone} (subnets are in {known}); add a subnet there "
                "or drop the zone"
            )
        placements.append((zone, in_zone))
    return placements
