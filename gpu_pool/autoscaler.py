"""Cluster Autoscaler: what takes the GPU pool from zero nodes to one, and back.

Identity is EKS Pod Identity: an association ties the chart's service account to a role that
pods.eks.amazonaws.com may assume, so no OIDC provider is needed. The IAM policy follows the
autoscaler's AWS least-privilege guidance: read-only calls on `*` (they have no resource-level
permissions), and the two mutating calls only on ASGs tagged as this cluster's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import IStableAnyProducer, Lazy
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cluster_pools import ClusterPools, PlacedNodeGroup
from gpu_pool.nag import acknowledge_wildcard_resources
from gpu_pool.node_template import DISCOVERY_ENABLED_TAG, discovery_tag
from gpu_pool.settings import AutoscalerSettings
from gpu_pool.versions import CLUSTER_AUTOSCALER

SERVICE_ACCOUNT = "cluster-autoscaler"
# Labels that differ between per-zone node groups of one instance type and must not stop them
# counting as similar for --balance-similar-node-groups. Zone labels and
# eks.amazonaws.com/nodegroup are ignored by the AWS provider already; `nodegroup-name` is
# derived from the eks:nodegroup-name ASG tag; the EBS CSI driver labels nodes with their zone.
BALANCING_IGNORE_LABELS = ("nodegroup-name", "topology.ebs.csi.aws.com/zone")

# The priority expander keeps, among the groups that fit a pending pod, those whose ASG name
# matches the highest priority's regexes, and hands a tie to least-waste
# (cluster-autoscaler/expander/priority/priority.go). The chart renders `expanderPriorities`
# as the ConfigMap cluster-autoscaler-priority-expander, which CA rereads on every scale-up.
PRIORITY_EXPANDER = "priority,least-waste"
# Groups no GPU priority names (the system nodes, the user's own) stay usable, below them all.
CATCH_ALL_PRIORITY = {"0": [".*"]}

READ_ONLY_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
SCALING_ACTIONS = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)


def autoscaler_policy_statements(cluster_name: str) -> list[iam.PolicyStatement]:
    return [
        # Describe*/Get* calls support no resource-level permissions: `*` is the only option.
        iam.PolicyStatement(actions=list(READ_ONLY_ACTIONS), resources=["*"]),
        iam.PolicyStatement(
            actions=list(SCALING_ACTIONS),
            resources=["*"],
            conditions={
                "StringEquals": {f"aws:ResourceTag/{discovery_tag(cluster_name)}": "owned"}
            },
        ),
    ]


def scale_up_priorities(node_groups: Sequence[PlacedNodeGroup]) -> dict[str, list[str]]:
    """Priority expander config: the fewer GPUs per node, then the cheaper the family, the
    higher a group's priority, so a 1-GPU pod never starts an 8-GPU node while a 1-GPU group
    fits it. Groups of equal cost share a priority (least-waste then chooses)."""
    costs = sorted({g.plan.scale_up_cost for g in node_groups}, reverse=True)
    priorities = dict(CATCH_ALL_PRIORITY)
    for rank, cost in enumerate(costs, start=1):
        priorities[str(rank * 10)] = [
            f"^{g.asg_name}$" for g in node_groups if g.plan.scale_up_cost == cost
        ]
    return priorities


@jsii.implements(IStableAnyProducer)
class _ScaleUpPriorities:
    """Produces the priorities at synth, once every pool on the cluster has been added."""

    def __init__(self, pools: ClusterPools) -> None:
        self._pools = pools

    def produce(self) -> Any:
        return scale_up_priorities(self._pools.node_groups)


def autoscaler_values(
    cluster_name: str,
    region: str,
    image_tag: str,
    settings: AutoscalerSettings,
    node_selector: Mapping[str, str],
    priorities: Any = None,
) -> dict[str, Any]:
    """The chart's values; `priorities` (expanderPriorities) is used with the priority expander."""
    priority = settings.expander == "priority"
    extra_args: dict[str, Any] = {
        "balance-similar-node-groups": True,
        "expander": PRIORITY_EXPANDER if priority else settings.expander,
        "scale-down-unneeded-time": settings.scale_down_unneeded_time,
        "scale-down-delay-after-add": settings.scale_down_delay_after_add,
    }
    # The chart drops everything after `_` in a key, which is how a flag repeats.
    for index, label in enumerate(BALANCING_IGNORE_LABELS, start=1):
        extra_args[f"balancing-ignore-label_{index}"] = label
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        # Explicit rather than the chart's default, so the discovery flag is visible here:
        # --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,...<cluster>
        "autoDiscovery": {
            "clusterName": cluster_name,
            "tags": [DISCOVERY_ENABLED_TAG, discovery_tag(cluster_name)],
        },
        "image": {"tag": image_tag},
        "fullnameOverride": "cluster-autoscaler",
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "nodeSelector": dict(node_selector),
        "extraArgs": extra_args,
        **({"expanderPriorities": priorities} if priority else {}),
    }


class ClusterAutoscaler(Construct):
    """Cluster Autoscaler for one cluster, discovering the ASGs tagged for it.

    With the `priority` expander (the default) it prefers, among the groups that fit a pod,
    the fewest GPUs per node and then the cheaper family, over every GpuNodePool added to the
    same cluster construct, before or after this one.

    :param cluster_name: the cluster's literal name (IAM condition keys cannot hold tokens).
    :param image_tag: the autoscaler image, whose minor must equal the cluster's.
    :param node_selector: where the autoscaler pod runs (never the GPU pool).
    :param install_pod_identity_agent: add the eks-pod-identity-agent add-on (new clusters).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        cluster_name: str,
        region: str,
        image_tag: str,
        settings: AutoscalerSettings,
        node_selector: Mapping[str, str],
        install_pod_identity_agent: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.SessionTagsPrincipal(iam.ServicePrincipal("pods.eks.amazonaws.com")),
            description=f"Cluster Autoscaler for EKS cluster {cluster_name}",
        )
        for statement in autoscaler_policy_statements(cluster_name):
            self.role.add_to_principal_policy(statement)
        acknowledge_wildcard_resources(
            self.role.node.find_child("DefaultPolicy"),
            "Cluster Autoscaler's AWS guidance: Describe* calls allow no resource-level "
            "permissions; the two mutating calls are limited by the cluster's ASG tag condition",
        )
        association = eks.CfnPodIdentityAssociation(
            self,
            "PodIdentity",
            cluster_name=cluster.cluster_name,
            namespace=CLUSTER_AUTOSCALER.namespace,
            service_account=SERVICE_ACCOUNT,
            role_arn=self.role.role_arn,
        )
        self.chart = eks.HelmChart(
            self,
            "Chart",
            cluster=cluster,
            chart=CLUSTER_AUTOSCALER.chart,
            repository=CLUSTER_AUTOSCALER.repository,
            version=settings.chart_version or CLUSTER_AUTOSCALER.version,
            namespace=CLUSTER_AUTOSCALER.namespace,
            release="cluster-autoscaler",
            values=autoscaler_values(
                cluster_name,
                region,
                image_tag,
                settings,
                node_selector,
                Lazy.any(_ScaleUpPriorities(ClusterPools.of(cluster))),
            ),
        )
        # Credentials must exist before the pod starts, or it crash-loops on the node role.
        self.chart.node.add_dependency(association)
        if install_pod_identity_agent:
            agent = eks.Addon(
                self,
                "PodIdentityAgent",
                cluster=cluster,
                addon_name="eks-pod-identity-agent",
            )
            self.chart.node.add_dependency(agent)
