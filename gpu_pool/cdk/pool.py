"""What every GPU pool construct is, whichever provisioner launches its nodes."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Tags
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.cdk.charts import install_gpu_software
from gpu_pool.cdk.registry import ClusterPools
from gpu_pool.cdk.report import report
from gpu_pool.plan.pool import PoolPlan


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
    ) -> None:
        super().__init__(scope, construct_id)
        self.plan = plan
        report(self, ClusterPools.of(cluster).add(plan))

    def _finish(self, cluster: eks.ICluster, tags: Mapping[str, str] | None) -> None:
        """Install the GPU software (and an EFA pool's EFA device plugin) and tag everything,
        once the subclass has built its nodes (after every settings error it may raise)."""
        self.gpu_software = (
            install_gpu_software(self, cluster, self.plan.chart)
            if self.plan.chart is not None
            else None
        )
        self.efa_device_plugin = (
            install_gpu_software(self, cluster, self.plan.efa_chart)
            if self.plan.efa_chart is not None
            else None
        )
        for key, value in (tags or {}).items():
            Tags.of(self).add(key, value)

    @property
    def workload_node_selector(self) -> dict[str, str]:
        """The nodeSelector that puts a pod on this pool (its gpu-pool.io/pool label)."""
        return self.plan.workload_node_selector

    @property
    def workload_tolerations(self) -> list[dict[str, str]]:
        """The tolerations a pod needs for this pool's taints (Kubernetes spelling)."""
        return self.plan.workload_tolerations
