"""KarpenterNodePool: a GPU pool whose nodes Karpenter launches for pending GPU pods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.cdk.capacity.efa import efa_network, placement
from gpu_pool.cdk.karpenter.controller import Karpenter
from gpu_pool.cdk.network.placement import subnets_by_zone
from gpu_pool.cdk.nodes.volume_key import allow_karpenter, stack_account
from gpu_pool.cdk.pool import PoolConstruct
from gpu_pool.cdk.report import names_itself, warn
from gpu_pool.checks.volume_key import check_key_account
from gpu_pool.plan.pool import PoolPlan, plan_pool
from gpu_pool.settings import ConfigError, PoolSettings


class KarpenterNodePool(PoolConstruct):
    """One GPU pool as a Karpenter NodePool and EC2NodeClass, with its device plugin.

    The pool's settings are checked as GpuNodePool checks them, plus Karpenter's own rules;
    errors raise ConfigError. The manifests depend on the whole Karpenter installation, so on
    deletion they go first, while the controller still runs to terminate their nodes.

    :param karpenter: the cluster's Karpenter installation.
    :param subnets: private subnets for the nodes; with `settings.zones`, some in each zone.
    :param settings: the pool's settings (provisioner: karpenter) or plan.
    :param tags: AWS tags on the launched instances and the pool's resources. Default: none.
    :param vpc: the cluster's VPC, for an EFA pool's security group. Default: the eks.Cluster's.

    What other constructs use: `node_pool` and `node_class` (the manifests),
    `workload_node_selector`, `workload_tolerations`, and `plan`.
    """

    @names_itself
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        karpenter: Karpenter,
        subnets: Sequence[ec2.ISubnet],
        settings: PoolSettings | PoolPlan,
        tags: Mapping[str, str] | None = None,
        vpc: ec2.IVpc | None = None,
    ) -> None:
        plan = settings if isinstance(settings, PoolPlan) else plan_pool(settings)
        if plan.karpenter is None:
            raise ConfigError(
                f"{plan.setting}.provisioner: '{plan.provisioner}'; KarpenterNodePool renders "
                "pools with provisioner: karpenter"
            )
        cluster = karpenter.cluster
        super().__init__(scope, construct_id, cluster=cluster, plan=plan)
        placements = subnets_by_zone(plan.setting, plan.settings.zones, subnets)
        subnet_ids = [s.subnet_id for group in placements.values() for s in group]
        security_group_ids = [karpenter.security_group_id]
        self.placement_group, placement_group_name = placement(self, plan)
        if plan.capacity.efa:
            efa_group = efa_network(self, plan, cluster, vpc, karpenter.security_group_id)
            security_group_ids.append(efa_group.attr_group_id)
        self.node_class = eks.KubernetesManifest(
            self,
            "NodeClass",
            cluster=cluster,
            manifest=[
                plan.karpenter.ec2_node_class(
                    role=karpenter.node_role.role_name,
                    subnet_ids=subnet_ids,
                    security_group_ids=security_group_ids,
                    tags=dict(tags or {}),
                    placement_group=placement_group_name,
                )
            ],
        )
        self.node_pool = eks.KubernetesManifest(
            self, "NodePool", cluster=cluster, manifest=[plan.karpenter.node_pool()]
        )
        self.node_pool.node.add_dependency(self.node_class)
        self.node_class.node.add_dependency(karpenter)
        if plan.settings.volume_kms_key_arn:
            # Karpenter launches as its controller, which then encrypts with the key. The
            # policy sits on the controller's role, inside the installation the NodeClass waits
            # for.
            allow_karpenter(karpenter.role, plan.settings.volume_kms_key_arn)
        warn(self, check_key_account(plan, stack_account(self)))
        self._finish(cluster, tags)
