"""Cluster Autoscaler: what takes the GPU pool from zero nodes to one, and back.

Identity is EKS Pod Identity: an association ties the chart's service account to a role that
pods.eks.amazonaws.com may assume, so no OIDC provider is needed. The IAM policy follows the
autoscaler's AWS least-privilege guidance: read-only calls on `*` (they have no resource-level
permissions), and the two mutating calls only on ASGs EKS tagged as this cluster's
(`eks:cluster-name`, which managed node groups carry; its value may be a token, where a tag KEY
holding the cluster name could not be).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import Aspects, IAspect, Lazy, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from gpu_pool.cdk.arguments import require_kubectl
from gpu_pool.cdk.autoscaling.controller import install_controller
from gpu_pool.cdk.nag.acknowledge import acknowledge_wildcard_resources
from gpu_pool.cdk.registry import (
    AtSynth,
    ClusterPools,
    EksCluster,
    PlacedNodeGroup,
    as_icluster,
    created_cluster_version,
)
from gpu_pool.cdk.report import names_itself, report
from gpu_pool.cdk.stacks import check_priority_stacks
from gpu_pool.checks.controllers import check_autoscaler, check_node_selector
from gpu_pool.model.labels import DISCOVERY_ENABLED_TAG, GPU_RESOURCE, discovery_tag
from gpu_pool.model.versions import CLUSTER_AUTOSCALER, autoscaler_image_tag
from gpu_pool.plan.dra import dra_pools
from gpu_pool.plan.node_group import NodeGroupPlan
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.settings import AutoscalerSettings

SERVICE_ACCOUNT = "cluster-autoscaler"
# Labels that differ between per-zone node groups of one instance type and must not stop them
# counting as similar for --balance-similar-node-groups. Zone labels and
# eks.amazonaws.com/nodegroup are ignored by the AWS provider already; `nodegroup-name` is
# derived from the eks:nodegroup-name ASG tag; the EBS CSI driver labels nodes with their zone.
BALANCING_IGNORE_LABELS = ("nodegroup-name", "topology.ebs.csi.aws.com/zone")

# The priority expander keeps, among the groups that fit a pending pod, those whose ASG name
# matches the highest priority's regexes, and hands a tie to least-waste
# (cluster-autoscaler/expander/priority/priority.go). It reads the ConfigMap
# cluster-autoscaler-priority-expander, key `priorities` (priority.go:37-39), from an informer
# on CA's namespace at every scale-up (priority.go:124, :62; expander_factory.go:97), so the
# ConfigMap can be written after CA starts; until it exists CA filters nothing (:125-126).
PRIORITY_EXPANDER = "priority,least-waste"
PRIORITIES_CONFIG_MAP = "cluster-autoscaler-priority-expander"
# Groups no GPU priority names (the system nodes, the user's own) stay usable, below them all.
CATCH_ALL_PRIORITY = {"0": [".*"]}
# CA keeps a group's first real node as its template until it restarts, so changed labels,
# taints or GPU counts stay invisible to it. A checksum of every group's node-template tags on
# its pod template makes a change roll the pod, and nothing else (sizes are not in it) does.
NODE_TEMPLATES_ANNOTATION = "gpu-pool.io/node-templates-checksum"

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
DYNAMIC_RESOURCE_ALLOCATION_FLAG = "enable-dynamic-resource-allocation"

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
            conditions={"StringEquals": {"aws:ResourceTag/eks:cluster-name": cluster_name}},
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


def priorities_text(priorities: Mapping[str, Sequence[str]]) -> str:
    """The ConfigMap's `priorities` YAML: rank -> regexes, each single-quoted (the ASG names
    are tokens, and a single quote needs no JSON escaping where the template joins them)."""
    lines = []
    for rank in sorted(priorities, key=int):
        lines.append(f"{rank}:")
        lines += ["  - '" + regex.replace("'", "''") + "'" for regex in priorities[rank]]
    return "\n".join(lines) + "\n"


def priorities_config_map(namespace: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PRIORITIES_CONFIG_MAP, "namespace": namespace},
        "data": {"priorities": text},
    }


def tags_lower_gpus(plan: NodeGroupPlan) -> bool:
    """Whether the group's tags make CA count fewer nvidia.com/gpu than its instance table
    does: renamed time-slicing and mixed MIG nodes advertise none. Before the tags exist, CA
    builds a zero-node template from the EKS API (labels, taints) and that table
    (cloudprovider/aws/aws_manager.go, buildNodeFromTemplate), so it would scale such a group
    up for a pod its nodes cannot run. Every other tag only adds resources: without it CA
    skips the group, which is safe."""
    advertised = (plan.gpu_resources or {}).get(GPU_RESOURCE, plan.gpu_count)
    return advertised < plan.gpu_count


@jsii.implements(IAspect)
class _TemplatesFirst:
    """At synth, once every pool is added: the chart waits for the tag resources of the groups
    of its stack whose tags lower the GPU count (tags_lower_gpus), so CA never starts seeing
    them untagged. A group in another stack is not waited for: it deploys after the cluster's,
    with CA running (as on any deploy that adds a group)."""

    def __init__(self, autoscaler: Construct, chart: Construct, pools: ClusterPools) -> None:
        self._autoscaler, self._chart, self._pools = autoscaler, chart, pools

    def visit(self, node: IConstruct) -> None:
        if node is not self._autoscaler:
            return
        stack = Stack.of(self._chart)
        for group in self._pools.node_groups:
            if tags_lower_gpus(group.plan) and Stack.of(group.tags) is stack:
                self._chart.node.add_dependency(group.tags)


def node_templates_checksum(node_groups: Sequence[PlacedNodeGroup]) -> str:
    """A short digest of every group's node-template tags, independent of pool order."""
    templates = sorted(json.dumps(g.plan.node_template_tags(), sort_keys=True) for g in node_groups)
    return hashlib.sha256("\n".join(templates).encode()).hexdigest()[:16]


def dynamic_resource_args(plans: Sequence[PoolPlan]) -> dict[str, Any]:
    """CA's DRA flag when a pool it scales uses the NVIDIA DRA driver (plan/dra.py): with it CA
    reads ResourceSlices, ResourceClaims and DeviceClasses to simulate a claim's pod on a node.
    The flag does not make CA count a DRA node without nvidia.com/gpu allocatable as ready:
    on AWS that exemption never applies (processors/customresources/gpu_processor.go:132,
    gpuExposedViaDra, needs a DraDriverName only GCE's provider sets), which is why DRA nodes
    carry no k8s.amazonaws.com/accelerator label (plan/node_template.node_labels). The flag is
    `--enable-dynamic-resource-allocation` (config/flags/flags.go), off by default in CA
    1.34.5 and locked on in 1.35.2 and 1.36.1 (where false is fatal), so it is set only where a
    pool needs it. Chart 9.59.0's ClusterRole already lets CA get, list and watch those three
    resource.k8s.io objects (templates/clusterrole.yaml): no extra RBAC."""
    if any(p.provisioner == "cluster-autoscaler" for p in dra_pools(plans)):
        return {DYNAMIC_RESOURCE_ALLOCATION_FLAG: True}
    return {}


def autoscaler_values(
    cluster_name: str,
    region: str,
    image_tag: str,
    settings: AutoscalerSettings,
    node_selector: Mapping[str, str],
    templates_checksum: str,
) -> dict[str, Any]:
    """The chart's values; `templates_checksum` goes on the pod so a node-template change
    restarts it. No `expanderPriorities`: the priorities name the node groups' ASGs, so the
    chart would wait for every node group; they are a ConfigMap of their own (see
    ClusterAutoscaler)."""
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
        "podAnnotations": {NODE_TEMPLATES_ANNOTATION: templates_checksum},
        "extraArgs": extra_args,
    }


class ClusterAutoscaler(Construct):
    """Cluster Autoscaler for one cluster, discovering the ASGs tagged for it.

    With the `priority` expander (the default) it prefers, among the groups that fit a pod,
    the fewest GPUs per node and then the cheaper family, over every GpuNodePool added to the
    same cluster construct, before or after this one (`priorities`: the ConfigMap naming their
    ASGs, the only part that waits for the node groups). Its settings are checked here: a bad
    pin raises ConfigError.

    :param cluster: the EKS cluster, with a kubectl provider; its name may be a token.
    :param settings: expander, scale-down timing, version pins. Default: AutoscalerSettings().
    :param kubernetes_version: the cluster's minor, e.g. "1.35". Default: the eks.Cluster's.
    :param node_selector: where the pod runs. Default: settings.node_selector, else untainted.
    :param install_pod_identity_agent: add the Pod Identity agent. Default: for an eks.Cluster.

    The minor picks the image (Cluster Autoscaler supports only its own minor): an imported
    cluster needs `kubernetes_version` or `settings.image_tag`. The Pod Identity agent add-on
    is one per cluster, shared with Karpenter; install it yourself on an imported cluster.
    """

    @names_itself
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: EksCluster,
        settings: AutoscalerSettings | None = None,
        kubernetes_version: str | None = None,
        node_selector: Mapping[str, str] | None = None,
        install_pod_identity_agent: bool | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        settings = settings or AutoscalerSettings()
        cluster = as_icluster(cluster)
        require_kubectl(cluster, "Cluster Autoscaler's chart")
        minor = kubernetes_version or created_cluster_version(cluster)
        pools = ClusterPools.of(cluster)
        node_selector = settings.node_selector if node_selector is None else node_selector
        # The pools it must not run on, and how many groups it chooses among, are judged at
        # synth (registry.py), when every pool is known.
        report(self, check_autoscaler(settings, minor) + check_node_selector(node_selector, ()))
        pools.add_controller(self, "autoscaler", node_selector, settings)
        if settings.expander == "priority":
            for group in pools.node_groups:
                check_priority_stacks(self, group.pool, cluster)
            pools.priority_autoscalers.append(self)
        # check_autoscaler guarantees one of the two.
        image_tag = settings.image_tag or str(autoscaler_image_tag(str(minor)))
        cluster_name = cluster.cluster_name
        values = autoscaler_values(
            cluster_name,
            Stack.of(self).region,
            image_tag,
            settings,
            node_selector,
            Lazy.string(AtSynth(lambda: node_templates_checksum(pools.node_groups))),
        )
        extra_args = values["extraArgs"]
        values["extraArgs"] = Lazy.any(
            AtSynth(lambda: {**extra_args, **dynamic_resource_args(pools.plans)})
        )
        self.role, self.chart = install_controller(
            self,
            cluster=cluster,
            pin=CLUSTER_AUTOSCALER,
            release="cluster-autoscaler",
            service_account=SERVICE_ACCOUNT,
            role_id="Role",
            description=f"Cluster Autoscaler for EKS cluster {cluster_name}",
            version=settings.chart_version,
            values=values,
            install_pod_identity_agent=install_pod_identity_agent,
        )
        # The priorities alone wait for the node groups (their ASG names come from the tag
        # resources), so the chart installs while the groups create. After the chart: an
        # upgrade from a release whose chart rendered this ConfigMap deletes it first.
        self.priorities: eks.KubernetesManifest | None = None
        if settings.expander == "priority":
            text = AtSynth(lambda: priorities_text(scale_up_priorities(pools.node_groups)))
            self.priorities = eks.KubernetesManifest(
                self,
                "Priorities",
                cluster=cluster,
                manifest=[priorities_config_map(CLUSTER_AUTOSCALER.namespace, Lazy.string(text))],
                overwrite=True,
            )
            self.priorities.node.add_dependency(self.chart)
        Aspects.of(self).add(_TemplatesFirst(self, self.chart, pools))
        for statement in autoscaler_policy_statements(cluster_name):
            self.role.add_to_principal_policy(statement)
        acknowledge_wildcard_resources(
            self.role.node.find_child("DefaultPolicy"),
            "Cluster Autoscaler's AWS guidance: Describe* calls allow no resource-level "
            "permissions; the two mutating calls are limited by the cluster's ASG tag condition",
        )
