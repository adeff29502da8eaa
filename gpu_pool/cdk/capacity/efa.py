"""An EFA pool's network: a security group allowing all traffic to and from itself, which
every EFA interface joins, and the placement group its nodes launch into: a cluster placement
group of the pool's own (its nodes on one network segment, so in one zone; EKS UG
ml/node-efa), or for reserved capacity the reservation's existing one or none
(plan/capacity.py says why). Both provisioners use it."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.plan.pool import PoolPlan
from gpu_pool.settings import ConfigError


def placement(scope: Construct, plan: PoolPlan) -> tuple[ec2.CfnPlacementGroup | None, str | None]:
    """The pool's own cluster placement group, when it gets one, and the name of the placement
    group its nodes launch into: that group's, the reservation's, or None."""
    capacity = plan.capacity
    if not capacity.own_placement_group:
        return None, capacity.reservation_placement_group
    group = ec2.CfnPlacementGroup(scope, "PlacementGroup", strategy="cluster")
    return group, group.ref


def efa_network(
    scope: Construct,
    plan: PoolPlan,
    cluster: eks.ICluster,
    vpc: ec2.IVpc | None,
    cluster_security_group_id: str | None,
) -> ec2.CfnSecurityGroup:
    """The EFA security group of `plan`'s pool, in `vpc` (default: the cluster's, which only
    an `eks.Cluster` knows)."""
    if not isinstance(cluster, eks.Cluster) and (vpc is None or cluster_security_group_id is None):
        raise ConfigError(
            f"{plan.setting}.efa: an imported cluster's EFA pool needs `vpc` and "
            "`cluster_security_group_id` (its EFA security group lives in the VPC, and its "
            "interfaces join the cluster security group)"
        )
    group = ec2.CfnSecurityGroup(
        scope,
        "EfaSecurityGroup",
        group_description=f"EFA traffic between the nodes of GPU pool {plan.name}",
        vpc_id=(vpc or cluster.vpc).vpc_id,
    )
    ec2.CfnSecurityGroupIngress(
        scope,
        "EfaIngress",
        group_id=group.attr_group_id,
        ip_protocol="-1",
        source_security_group_id=group.attr_group_id,
        description="EFA: all traffic from the pool's own nodes",
    )
    ec2.CfnSecurityGroupEgress(
        scope,
        "EfaEgress",
        group_id=group.attr_group_id,
        ip_protocol="-1",
        destination_security_group_id=group.attr_group_id,
        description="EFA: all traffic to the pool's own nodes",
    )
    return group
