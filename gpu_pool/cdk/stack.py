"""GpuPoolStack: the app's stack, a GPU pool on a new or an existing EKS cluster."""

from __future__ import annotations

import json
from typing import cast

from aws_cdk import (
    Acknowledgment,
    Annotations,
    CfnOutput,
    CfnResource,
    Environment,
    Fn,
    Stack,
    Token,
    Validations,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.cdk.arguments import check_arguments
from gpu_pool.cdk.auto_mode.node_pool import AutoModeNodePool
from gpu_pool.cdk.autoscaling.autoscaler import ClusterAutoscaler
from gpu_pool.cdk.capacity.reservations import looked_up_reservations
from gpu_pool.cdk.cluster.eks import SYSTEM_NODE_LABEL, new_cluster
from gpu_pool.cdk.cluster.imported import imported_cluster, wait_for_kubectl_access
from gpu_pool.cdk.cluster.verifier import ClusterVerifier, Verifier
from gpu_pool.cdk.gpu_software.metrics import GpuMetrics
from gpu_pool.cdk.gpu_software.node_health import node_monitoring_agent
from gpu_pool.cdk.karpenter.controller import Karpenter
from gpu_pool.cdk.karpenter.node_pool import KarpenterNodePool
from gpu_pool.cdk.lookups.cluster import existing_cluster_facts
from gpu_pool.cdk.lookups.context import guard_deploy, looked_up
from gpu_pool.cdk.lookups.region import (
    AVAILABILITY_ZONES_PROVIDER,
    DUMMY_ZONES,
    region_facts,
    zones_shape_template,
    zones_unchecked,
)
from gpu_pool.cdk.nodegroups.pool import GpuNodePool
from gpu_pool.cdk.pod_identity import CLUSTER_AGENT_ID
from gpu_pool.cdk.registry import ClusterPools
from gpu_pool.cdk.report import report
from gpu_pool.checks import check_settings
from gpu_pool.checks.app import uses_autoscaler, uses_karpenter
from gpu_pool.model.karpenter_api import resource_name
from gpu_pool.plan.existing_cluster import with_cluster_facts
from gpu_pool.plan.pool import PoolPlan, pascal_case, plan_pools
from gpu_pool.plan.repair import needs_node_monitoring_agent
from gpu_pool.settings import AppSettings


class GpuPoolStack(Stack):
    """GPU pools and their cluster, from AppSettings (see docs/settings.md for every key)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: AppSettings,
        verifier: Verifier | None = None,
        stack_name: str | None = None,
    ) -> None:
        """`verifier`: who may run `gpu-pool verify` on the cluster from another account (a
        deployment pipeline's; cdk/cluster/verifier.py); None: no verify role. `stack_name`: the
        CloudFormation stack's name; None: the construct id (CDK's default)."""
        check_arguments(
            GpuPoolStack.__init__,
            {
                "scope": scope,
                "construct_id": construct_id,
                "settings": settings,
                "verifier": verifier,
                "stack_name": stack_name,
            },
            owner=f"GpuPoolStack '{construct_id}'",
        )
        env = Environment(account=settings.account, region=settings.region)
        super().__init__(scope, construct_id, env=env, stack_name=stack_name)
        # An existing cluster as looked up (None: a new cluster, or nothing looked up); the
        # settings then hold its facts wherever they leave them unset, and its version.
        self.cluster_facts = existing_cluster_facts(self, settings)
        if self.cluster_facts is not None:
            settings = with_cluster_facts(settings, self.cluster_facts)
        self.settings = settings
        # The stack's zones are literal in its template: expected, not cfn-lint's W3010, as
        # aws-cdk-lib's own getter acknowledges (which `availability_zones` below replaces).
        Validations.of(self).acknowledge(
            Acknowledgment(id="CloudFormation-Validate::W3010", reason=_LITERAL_ZONES)
        )
        for rule, reason in settings.acknowledge.items():
            # The warnings the settings accept, by the id report.warn gives each of them.
            Annotations.of(self).acknowledge_warning(f"gpu-pool:{rule}", reason)
        plans = plan_pools(settings)
        # An existing cluster not looked up yet runs a minor not known here: no AMI type is
        # looked up for one it may not run (its own unchecked fact names the version).
        unknown_minor = self.cluster_facts is not None and self.cluster_facts.placeholder
        # Before the lookup is cached the stack's zones are placeholders (dummy1a, ...).
        zones = self.availability_zones
        known_zones = [z for z in zones if not Token.is_unresolved(z) and z not in DUMMY_ZONES]
        found = check_settings(
            settings,
            plans,
            known_zones=known_zones,
            reservations=looked_up_reservations(self, plans),
            region_facts=region_facts(
                self, plans, None if unknown_minor else settings.cluster.kubernetes_version
            ),
            cluster_facts=self.cluster_facts,
        )
        # Every error before anything is built; each pool construct reports its own warnings.
        report(self, [f for pool in found.pools for f in pool if f.error] + found.app)
        pools = ClusterPools(settings_checked=True)
        for plan, findings in zip(plans, found.pools, strict=True):
            pools.add(plan, findings)
        existing = settings.cluster.existing
        self.cluster: eks.ICluster
        if existing is None:
            cluster, subnets = new_cluster(self, settings, known_zones)
            # jsii classes implement their interfaces at runtime; mypy cannot see it.
            self.cluster = cast(eks.ICluster, cluster)
        else:
            self.cluster, subnets = imported_cluster(
                self, settings.cluster, existing, self.cluster_facts
            )
        ClusterPools.of(self.cluster, pools)
        # Node groups and their autoscaler first, then Karpenter and its pools: a stack that
        # adds a Karpenter pool keeps the autoscaler's resources (the Pod Identity agent too).
        built: dict[str, GpuNodePool | KarpenterNodePool | AutoModeNodePool] = {
            plan.name: self._node_group_pool(plan, subnets)
            for plan in plans
            if plan.provisioner == "cluster-autoscaler"
        }
        if uses_autoscaler(settings):
            self.autoscaler = self._autoscaler(settings)
        if uses_karpenter(settings):
            self.karpenter = self._karpenter(settings)
            for plan in plans:
                if plan.provisioner == "karpenter":
                    built[plan.name] = self._karpenter_pool(plan, subnets, self.karpenter)
        for plan in plans:
            if plan.provisioner == "auto-mode":
                built[plan.name] = self._auto_mode_pool(plan, subnets)
        self.pools = [built[plan.name] for plan in plans]
        # Repair acts on the agent's conditions.
        wants_agent = existing is None or existing.node_monitoring_agent is True
        if wants_agent and needs_node_monitoring_agent(plan.provisioner for plan in plans):
            self.node_monitoring_agent = node_monitoring_agent(self, self.cluster)
        if settings.metrics.gpu != "none":
            self.metrics = GpuMetrics(
                self, "GpuMetrics", cluster=self.cluster, settings=settings.metrics
            )
        CfnOutput(self, "ClusterName", value=settings.cluster.name)
        if verifier is not None:
            self.verifier = ClusterVerifier(
                self, "Verifier", cluster=self.cluster, verifier=verifier
            )
        _keep_agent_logical_id(self.cluster)
        wait_for_kubectl_access(self)
        guard_deploy(self)

    @property
    def availability_zones(self) -> list[str]:
        """The Region's zones as the availability-zones lookup cached them (aws-cdk-lib's own
        getter for an environment-agnostic stack); until then, and when the CLI's lookup failed
        (no credentials), its placeholders: aws-cdk-lib's getter would make a failed lookup the
        stack's error, which stops the synth, where GP-REGION-08 names the fact
        (cdk/lookups/context.py)."""
        if Token.is_unresolved(self.account) or Token.is_unresolved(self.region):
            return list(super().availability_zones)
        zones = looked_up(
            self,
            provider=AVAILABILITY_ZONES_PROVIDER,
            props={},
            dummy=list(DUMMY_ZONES),
            unchecked=lambda why: zones_unchecked(self, self.settings, why),
            blocks_deploy=zones_shape_template(self.settings),
        )
        return list(zones) if zones is not None else list(DUMMY_ZONES)

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
        return pool

    def _auto_mode_pool(self, plan: PoolPlan, subnets: list[ec2.ISubnet]) -> AutoModeNodePool:
        construct_id = _pool_construct_id(plan)
        existing = self.settings.cluster.existing
        pool = AutoModeNodePool(
            self,
            construct_id,
            cluster=self.cluster,
            subnets=subnets,
            settings=plan,
            security_group_id=existing.cluster_security_group_id if existing else None,
        )
        self._outputs(construct_id, plan)
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
        if plan.provisioner in _NODE_POOL_OF:
            CfnOutput(
                self,
                f"{construct_id}NodePool",
                description=f"pool {plan.name}: its {_NODE_POOL_OF[plan.provisioner]} NodePool",
                value=resource_name(plan.name),
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
            install_pod_identity_agent=existing.pod_identity_agent if existing else None,
        )

    def _autoscaler(self, settings: AppSettings) -> ClusterAutoscaler:
        existing = settings.cluster.existing
        return ClusterAutoscaler(
            self,
            "ClusterAutoscaler",
            cluster=self.cluster,
            settings=settings.autoscaler,
            kubernetes_version=settings.cluster.kubernetes_version,
            node_selector=self._controller_node_selector(settings.autoscaler.node_selector),
            install_pod_identity_agent=existing.pod_identity_agent if existing else None,
        )

    def _controller_node_selector(self, selector: dict[str, str]) -> dict[str, str]:
        """Where a controller (the autoscaler, Karpenter) runs: its setting, or if that is
        empty the system node group of a new cluster; on an existing cluster, none (any
        untainted node its chart allows)."""
        if selector or self.settings.cluster.existing is not None:
            return selector
        return dict([SYSTEM_NODE_LABEL])


_LITERAL_ZONES = "Literal zones in the template come from the stack's zones; this is expected"

# The logical id the Pod Identity agent add-on had when the first controller created it (the
# autoscaler, in the default app). A new id would make CloudFormation create a second
# eks-pod-identity-agent before deleting the first, which fails: the add-on already exists
# (awslabs/cdk-eks-blueprints#1009). docs/day2.md says what a stack with another id does.
AGENT_LOGICAL_ID = "ClusterAutoscalerPodIdentityAgent581ADAB7"


def _keep_agent_logical_id(cluster: eks.ICluster) -> None:
    agent = cluster.node.try_find_child(CLUSTER_AGENT_ID)
    resource = agent.node.default_child if agent is not None else None
    if isinstance(resource, CfnResource):
        resource.override_logical_id(AGENT_LOGICAL_ID)


# Whose NodePool a pool of each NodePool provisioner has, for its stack output's description.
_NODE_POOL_OF = {"karpenter": "Karpenter", "auto-mode": "Auto Mode"}


def _pool_construct_id(plan: PoolPlan) -> str:
    """The one-pool form keeps the construct id it always had: a new id would change every
    logical id and replace the deployed node groups."""
    return "GpuPool" if plan.setting == "pool" else f"GpuPool{pascal_case(plan.name)}"
