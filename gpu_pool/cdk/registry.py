"""The GPU pools and controllers on one cluster: where the rules between them run and the
autoscaler finds the pools.

Each pool's plan is checked once, when it is added: its own rules, then the rules between it and
the pools added before it (unique names, one device plugin per node, one GPU Operator, pools a
workload cannot tell apart). The cluster-wide rules run at synth, once the app is built, so the
order constructs are added in does not matter: one ClusterAutoscaler and one Karpenter, no
controller on a GPU pool's nodes, a pool nothing scales. Cluster Autoscaler reads every pool's
node groups at synth too.

There is one registry per cluster construct. Imports of one cluster in several stacks of an app
(each its own construct) are recognised at synth by the cluster's literal name and the
account and Region their stacks state: the cluster-wide rules then count their controllers
together (two ClusterAutoscalers on one cluster fail to deploy whichever stack adds them). The
rules between pools still see only the pools of one construct: they run as each pool is added,
before the other stacks exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, cast

import jsii
from aws_cdk import (
    CfnResource,
    IStableAnyProducer,
    IStableStringProducer,
    Stack,
    Stage,
    Tags,
    Token,
)
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct, IValidation

from gpu_pool.cdk.report import located, warn
from gpu_pool.checks import check_pool_on_cluster
from gpu_pool.checks.controllers import (
    InstalledController,
    check_expander,
    check_one_of_each,
    check_pool_is_scaled,
    check_selector_avoids_pools,
)
from gpu_pool.checks.library import check_operator_exporter, check_repair_agent
from gpu_pool.checks.metrics import check_metrics
from gpu_pool.checks.target import check_pool_target
from gpu_pool.model.findings import Finding
from gpu_pool.plan.existing_cluster import ADDON_OWNER_TAG
from gpu_pool.plan.node_group import NodeGroupPlan
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.repair import NODE_MONITORING_AGENT_ADDON
from gpu_pool.settings import AutoscalerSettings, MetricsSettings

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


@jsii.implements(IStableAnyProducer, IStableStringProducer)
class AtSynth:
    """A value produced at synth from a cluster's registry, so pools added after the
    construct that asks count too. Lazy.any and Lazy.string both take it."""

    def __init__(self, produce: Callable[[], Any]) -> None:
        self._produce = produce

    def produce(self) -> Any:
        return self._produce()


@dataclass(frozen=True)
class PlacedNodeGroup:
    """A node group as built: its plan, the name of the ASG EKS made for it (a token), the
    pool construct that owns it, and the construct that writes its ASG's tags."""

    plan: NodeGroupPlan
    asg_name: str
    pool: Construct
    tags: Construct


@dataclass
class _Controller:
    scope: Construct
    installed: InstalledController
    autoscaler: AutoscalerSettings | None


@dataclass
class ClusterPools:
    """The pools and controllers of one cluster, and the findings of each pool (computed once
    per plan)."""

    plans: list[PoolPlan] = field(default_factory=list)
    node_groups: list[PlacedNodeGroup] = field(default_factory=list)
    # Autoscalers whose chart names every node group's ASG (the priority expander): a node
    # group in another stack must not make a dependency cycle (cdk/stacks.py).
    priority_autoscalers: list[Construct] = field(default_factory=list)
    # The bundled app's stack ran every settings rule first (checks.check_settings): the
    # constructs do not repeat the ones that cover their own checks (metrics, Auto Mode compute).
    settings_checked: bool = False
    # The cluster's GpuMetrics construct and its settings, if any (one per cluster).
    metrics: tuple[Construct, MetricsSettings] | None = None
    _findings: list[list[Finding]] = field(default_factory=list)
    _scopes: list[Construct | None] = field(default_factory=list)
    _controllers: list[_Controller] = field(default_factory=list)

    def add(
        self,
        plan: PoolPlan,
        findings: list[Finding] | None = None,
        scope: Construct | None = None,
        *,
        kubernetes_minor: str | None = None,
        region: str | None = None,
    ) -> list[Finding]:
        """Register `plan` (built by `scope`, once known) and return its findings (`findings`,
        if the caller has run the rules already; else the pool's rules on the cluster and
        against `kubernetes_minor` and `region`, where known). The same plan object added again
        by the construct that builds it (the stack registers its plans first, without a scope)
        returns them as before; an equal plan, or the same plan object handed to a second
        construct, is another pool and meets the rules between pools (GP-PAIR-01)."""
        for index, registered in enumerate(self.plans):
            known_scope = self._scopes[index]
            if registered is plan and (known_scope is None or known_scope is scope):
                self._scopes[index] = scope or known_scope
                return self._findings[index]
        if findings is None:
            findings = check_pool_on_cluster(plan, self.plans) + check_pool_target(
                plan, kubernetes_minor, region
            )
        self.plans.append(plan)
        self._findings.append(findings)
        self._scopes.append(scope)
        return findings

    def add_controller(
        self,
        scope: Construct,
        setting: str,
        node_selector: Mapping[str, str],
        autoscaler: AutoscalerSettings | None = None,
    ) -> None:
        """Register a controller construct (`setting`: `autoscaler`, with its `autoscaler`
        settings, or `karpenter`) for the cluster-wide rules."""
        installed = InstalledController(setting, scope.node.path, dict(node_selector))
        self._controllers.append(_Controller(scope, installed, autoscaler))

    def controller_errors(self, imports: Sequence[ClusterPools] = ()) -> list[str]:
        """One controller of each kind, counted over this registry and `imports` (those of
        other constructs of the same cluster), once every construct is added."""
        return [str(f) for f in check_one_of_each(self._installed(imports))]

    def _installed(self, imports: Sequence[ClusterPools]) -> list[InstalledController]:
        """The controllers of this registry and of `imports`, as the rules count them."""
        return [c.installed for pools in (self, *imports) for c in pools._controllers]

    def metrics_errors(self) -> list[str]:
        """Pools planned for other GPU metrics than the cluster's GpuMetrics installs."""
        if self.metrics is None:
            return []
        scope, metrics = self.metrics
        found = [f for plan in self.plans for f in check_operator_exporter(metrics.gpu, plan)]
        return [f"{located(scope)}: {f}" for f in found]

    def selector_errors(self, imports: Sequence[ClusterPools] = ()) -> list[str]:
        """No controller of this registry selecting the nodes of a GPU pool (of this registry
        or `imports`)."""
        errors = []
        plans = [plan for pools in (self, *imports) for plan in pools.plans]
        for controller in sorted(self._controllers, key=lambda c: c.installed.path):
            found = check_selector_avoids_pools(
                controller.installed.node_selector, plans, controller.installed.setting
            )
            errors += [f"{located(controller.scope)}: {f}" for f in found]
        return errors

    def cluster_warnings(
        self, imports: Sequence[ClusterPools] = (), *, agent_added: bool = True
    ) -> list[tuple[Construct, list[Finding]]]:
        """The cluster-wide rules' warnings, each with the construct it is about: a pool no
        controller (of this registry or `imports`) scales, an expander that ignores GPUs among
        several groups, GPU metrics that miss some pool's nodes, a library app's repairing pool
        where the app adds no node monitoring agent (`agent_added` False)."""
        installed = self._installed(imports)
        warnings = [
            (scope, check_pool_is_scaled(plan, installed))
            for plan, scope in zip(self.plans, self._scopes, strict=True)
            if scope is not None
        ]
        groups = sum(len(pools.node_groups) for pools in (self, *imports))
        warnings += [
            (c.scope, check_expander(c.autoscaler, groups))
            for c in self._controllers
            if c.autoscaler is not None
        ]
        if self.metrics is not None and not self.settings_checked:
            scope, metrics = self.metrics
            warnings.append((scope, check_metrics(metrics, self.plans)))
        if not self.settings_checked and not agent_added:
            warnings += [
                (scope, check_repair_agent(plan))
                for plan, scope in zip(self.plans, self._scopes, strict=True)
                if scope is not None
            ]
        return warnings

    @classmethod
    def of(cls, cluster: eks.ICluster, pools: ClusterPools | None = None) -> ClusterPools:
        """The cluster's registry, created (from `pools`, if given) on first use."""
        return cluster_scope(cluster, pools or cls()).pools


def cluster_scope(cluster: eks.ICluster, pools: ClusterPools | None = None) -> _Holder:
    """The construct that keeps the cluster's registry and its cluster-wide resources, in the
    cluster's stack: `GpuPools<cluster's id>` (its path below the stack, without the slashes).
    Not under the cluster construct itself: an imported cluster is no Construct to Python."""
    stack = Stack.of(cluster)
    below = cluster.node.path.removeprefix(f"{stack.node.path}/")
    holder_id = "GpuPools" + "".join(below.split("/"))
    holder = stack.node.try_find_child(holder_id)
    if not isinstance(holder, _Holder):
        name = literal_cluster_name(cluster)
        key = None if name is None else (name, stack.account, stack.region)
        holder = _Holder(stack, holder_id, pools or ClusterPools(), key)
    return holder


class _Holder(Construct):
    """Keeps a cluster's registry in the construct tree, and runs its rules once the app is
    built, whatever order the constructs were added in. `key`: the cluster's literal name and
    its stack's account and Region (tokens where the stack is environment-agnostic), by which
    other constructs of the same cluster are found; None for a name EKS generates."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        pools: ClusterPools,
        key: tuple[str, str, str] | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.pools = pools
        self.key = key
        self.node.add_validation(_ClusterRules(self))

    def same_cluster(self) -> list[_Holder]:
        """The holders of the same cluster in this holder's cloud assembly (its Stage: another
        Stage deploys separately), this one included, by path."""
        if self.key is None:
            return [self]
        return sorted(
            (h for h in _holders(Stage.of(self) or self.node.root) if h.key == self.key),
            key=lambda h: h.node.path,
        )


def _holders(stage: IConstruct) -> Iterator[_Holder]:
    """The registries in `stage`: children of its stacks (nested stacks included), looked for
    without walking every construct the stacks hold."""
    todo = list(stage.node.children)
    while todo:
        child = todo.pop()
        if isinstance(child, _Holder):
            yield child
        elif isinstance(child, Stack):
            todo += [c for c in child.node.children if isinstance(c, (Stack, _Holder))]
        elif not isinstance(child, Stage):
            todo += child.node.children


def _adds_agent(scope: IConstruct) -> bool:
    """Whether the app (the Stage `scope` is in: another Stage deploys separately) adds the node
    monitoring agent add-on, through any construct library's L1 (aws_eks_v2.Addon's, aws_eks's
    CfnAddon). To any cluster: a created cluster's name in an add-on is a token, so an agent
    added to another cluster of the same app counts too (GP-LIB-04 may then miss a pool; it
    never warns an app that adds the agent)."""
    stage = Stage.of(scope) or scope.node.root
    return any(
        _l1_resource_type(type(construct)) == "AWS::EKS::Addon"
        and getattr(construct, "addon_name", None) == NODE_MONITORING_AGENT_ADDON
        for construct in stage.node.find_all()
    )


@cache
def _l1_resource_type(construct_class: type) -> str | None:
    """The CloudFormation type an L1 class renders (its CFN_RESOURCE_TYPE_NAME), None for any
    other construct class: asked of aws-cdk-lib once per class, not once per construct."""
    if not issubclass(construct_class, CfnResource):
        return None
    name = getattr(construct_class, "CFN_RESOURCE_TYPE_NAME", None)
    return name if isinstance(name, str) else None


@jsii.implements(IValidation)
class _ClusterRules:
    """Errors fail the synth (CDK lists them under the registry's path); warnings become
    annotations on the construct they are about, added at the first synth only. With other
    constructs of the same cluster in the app, the first (by path) counts the controllers of
    all, and its errors say which constructs they are."""

    def __init__(self, holder: _Holder) -> None:
        self._holder = holder
        self._warned = False

    def validate(self) -> list[str]:
        holders = self._holder.same_cluster()
        imports = [h.pools for h in holders if h is not self._holder]
        pools = self._holder.pools
        if not self._warned:
            self._warned = True
            agent = _adds_agent(self._holder)
            for scope, findings in pools.cluster_warnings(imports, agent_added=agent):
                warn(scope, findings)
        errors = pools.selector_errors(imports) + pools.metrics_errors()
        if holders[0] is not self._holder:
            return errors  # the first holder counts this one's controllers too
        counted = pools.controller_errors(imports)
        if imports and self._holder.key is not None:
            stacks = ", ".join(f"'{Stack.of(h).node.path}'" for h in holders)
            where = (
                f"cluster '{self._holder.key[0]}' in stacks {stacks} (one name, account, Region)"
            )
            counted = [f"{where}: {error}" for error in counted]
        return counted + errors


def owned_addon(addon: eks.Addon) -> eks.Addon:
    """`addon`, tagged with the name of the stack that creates it (ADDON_OWNER_TAG): a later
    lookup of the cluster leaves it to that stack instead of taking it for the cluster's own,
    and to every other stack on the cluster it is the cluster's."""
    Tags.of(addon).add(ADDON_OWNER_TAG, Stack.of(addon).stack_name)
    return addon
