"""What every GPU pool construct is, whichever provisioner launches its nodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import CfnOutput, Stack, Tags, Token
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.cdk.gpu_software.charts import install_gpu_software
from gpu_pool.cdk.gpu_software.dra import install_dra_driver
from gpu_pool.cdk.gpu_software.efa_dra import install_efa_dra_driver
from gpu_pool.cdk.registry import ClusterPools, literal_cluster_name
from gpu_pool.cdk.report import report
from gpu_pool.plan.dra import driver_pools
from gpu_pool.plan.efa_dra import efa_dra_pools
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.record import POOL_RECORD_TYPE, pool_record


class PoolConstruct(Construct):
    """A pool's plan, checked against the cluster's other pools (errors raise ConfigError,
    warnings become annotations), the chart that makes its GPUs allocatable, its tags, and what
    a workload needs to land on it. GpuNodePool and KarpenterNodePool add the nodes."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        plan: PoolPlan,
        kubernetes_minor: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.plan = plan
        region = Stack.of(self).region
        # The stack's Region where it is literal; None in an environment-agnostic stack.
        self._literal_region = None if Token.is_unresolved(region) else region
        report(
            self,
            ClusterPools.of(cluster).add(
                plan, scope=self, kubernetes_minor=kubernetes_minor, region=self._literal_region
            ),
        )

    def _finish(
        self,
        cluster: eks.ICluster,
        tags: Mapping[str, str] | None,
        node_group_names: Sequence[str] = (),
    ) -> None:
        """Install the GPU software (and an EFA pool's EFA device plugin), tag everything and
        record the pool, once the subclass has built its nodes (after every settings error it
        may raise)."""
        self.gpu_software: eks.HelmChart | None = None
        if self.plan.chart is not None:
            self.gpu_software = install_gpu_software(self, cluster, self.plan.chart)
        # One release per cluster, shared by the pools that run the DRA driver for their GPUs
        # or their ComputeDomains (cdk/gpu_software/dra.py); Auto Mode nodes run their own.
        if driver_pools([self.plan]):
            dra_driver = install_dra_driver(cluster)
            if self.plan.chart is None:
                self.gpu_software = dra_driver
        self.efa_device_plugin = (
            install_gpu_software(self, cluster, self.plan.efa_chart)
            if self.plan.efa_chart is not None
            else None
        )
        # Or, for efa_software: dra-driver, the cluster's one EFA DRA driver release
        # (cdk/gpu_software/efa_dra.py).
        if efa_dra_pools([self.plan]):
            install_efa_dra_driver(cluster)
        for key, value in (tags or {}).items():
            Tags.of(self).add(key, value)
        self._record(cluster, node_group_names)

    def _record(self, cluster: eks.ICluster, node_group_names: Sequence[str]) -> None:
        """What the `gpu-pool` command reads of the pool (gpu_pool/plan/record.py): literal
        values as metadata in the cloud assembly (--cdk-out), and every value, resolved at
        deploy, as a stack output (--stack)."""
        stack = Stack.of(self)
        assembly = pool_record(self.plan, literal_cluster_name(cluster), self._literal_region)
        self.node.add_metadata(POOL_RECORD_TYPE, assembly.to_json())
        deployed = pool_record(self.plan, cluster.cluster_name, stack.region, node_group_names)
        CfnOutput(
            self,
            "Record",
            description=f"pool {self.plan.name}: what the gpu-pool command reads (--stack)",
            value=stack.to_json_string(deployed.to_json()),
        )

    @property
    def workload_node_selector(self) -> dict[str, str]:
        """The nodeSelector that puts a pod on this pool (its gpu-pool.io/pool label)."""
        return self.plan.workload_node_selector

    @property
    def workload_tolerations(self) -> list[dict[str, str]]:
        """The tolerations a pod needs for this pool's taints (Kubernetes spelling)."""
        return self.plan.workload_tolerations
