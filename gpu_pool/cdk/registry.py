"""The GPU pools on one cluster: where rules between pools run and the autoscaler finds them.

Each pool's plan is checked once, when it is added: its own rules, then the rules between it and
the pools added before it (unique names, one device plugin per node, one GPU Operator, pools a
workload cannot tell apart). Cluster Autoscaler reads every pool's node groups at synth,
whichever was added first. There is one registry per cluster construct; pools on another import
of the same cluster are not seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from aws_cdk import Stack, Token
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.checks import check_pool_on_cluster
from gpu_pool.model.findings import Finding
from gpu_pool.plan.node_group import NodeGroupPlan
from gpu_pool.plan.pool import PoolPlan

# What the constructs' `cluster` takes: jsii's generated eks.Cluster lacks one member of the
# eks.ICluster protocol as mypy sees it, though at runtime it implements it.
EksCluster = eks.ICluster | eks.Cluster


def as_icluster(cluster: EksCluster) -> eks.ICluster:
    return cast(eks.ICluster, cluster)


def literal_cluster_name(cluster: eks.ICluster) -> str | None:
    """The cluster's name as text: an imported cluster's, or the name a created cluster was
    given (its `cluster_name` attribute is a Ref); None if EKS will generate it."""
    if not Token.is_unresolved(cluster.cluster_name):
        return cluster.cluster_name
    resource = cluster.node.default_child if isinstance(cluster, eks.Cluster) else None
    name = resource.name if isinstance(resource, eks.CfnCluster) else None
    return name if name is not None and not Token.is_unresolved(name) else None


def created_cluster_version(cluster: eks.ICluster) -> str | None:
    """The Kubernetes minor of a cluster this app creates (its AWS::EKS::Cluster's Version);
    None for an imported cluster, which does not say."""
    resource = cluster.node.default_child if isinstance(cluster, eks.Cluster) else None
    return resource.version if isinstance(resource, eks.CfnCluster) else None


@dataclass(frozen=True)
class PlacedNodeGroup:
    """A node group as built: its plan, the name of the ASG EKS made for it (a token), and the
    pool construct that owns it."""

    plan: NodeGroupPlan
    asg_name: str
    pool: Construct


@dataclass
class ClusterPools:
    """The pools of one cluster, and the findings of each (computed once per plan)."""

    plans: list[PoolPlan] = field(default_factory=list)
    node_groups: list[PlacedNodeGroup] = field(default_factory=list)
    # The eks-pod-identity-agent add-on, once one construct (the autoscaler or Karpenter) has
    # added it; the other depends on it instead of adding a second.
    pod_identity_agent: eks.Addon | None = None
    # Autoscalers whose chart names every node group's ASG (the priority expander): a node
    # group in another stack must not make a dependency cycle (cdk/stacks.py).
    priority_autoscalers: list[Construct] = field(default_factory=list)
    _findings: list[list[Finding]] = field(default_factory=list)

    def add(self, plan: PoolPlan, findings: list[Finding] | None = None) -> list[Finding]:
        """Register `plan` and return its findings (`findings`, if the caller has run the rules
        already); a plan added again returns them as before."""
        for index, registered in enumerate(self.plans):
            if registered is plan:
                return self._findings[index]
        if findings is None:
            findings = check_pool_on_cluster(plan, self.plans)
        self.plans.append(plan)
        self._findings.append(findings)
        return findings

    @classmethod
    def of(cls, cluster: eks.ICluster, pools: ClusterPools | None = None) -> ClusterPools:
        """The cluster's registry, created (from `pools`, if given) on first use."""
        stack = Stack.of(cluster)
        holder_id = f"GpuPools{cluster.node.addr}"
        holder = stack.node.try_find_child(holder_id)
        if not isinstance(holder, _Holder):
            holder = _Holder(stack, holder_id, pools or cls())
        return holder.pools


class _Holder(Construct):
    """Keeps a cluster's registry in the construct tree (no resources)."""

    def __init__(self, scope: Construct, construct_id: str, pools: ClusterPools) -> None:
        super().__init__(scope, construct_id)
        self.pools = pools
