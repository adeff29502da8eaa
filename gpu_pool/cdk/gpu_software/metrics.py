"""GpuMetrics: GPU metrics for a cluster's pools, as `metrics.gpu` chooses.

dcgm-exporter: NVIDIA's chart, pinned in versions.py, on the GPU nodes plan/metrics.py selects.
cloudwatch: the Amazon CloudWatch Observability EKS add-on (Container Insights with enhanced
observability, whose operator runs a DCGM exporter on GPU nodes, GPU metrics on by default), at
the pinned build, without container logs and Application Signals auto-monitoring
(plan/metrics.py), its agent credentialed through EKS Pod Identity with
CloudWatchAgentServerPolicy (Amazon CloudWatch user guide, "Install the CloudWatch agent with
the Amazon CloudWatch Observability EKS add-on").
"""

from __future__ import annotations

from aws_cdk import Lazy
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.arguments import require_kubectl
from gpu_pool.cdk.gpu_software.charts import helm_chart
from gpu_pool.cdk.nag.acknowledge import acknowledge_managed_policies
from gpu_pool.cdk.pod_identity import pod_identity_agent, pod_identity_role
from gpu_pool.cdk.registry import AtSynth, ClusterPools, EksCluster, as_icluster, owned_addon
from gpu_pool.cdk.report import located, names_itself
from gpu_pool.model.versions import CLOUDWATCH_OBSERVABILITY_ADDON_VERSION, DCGM_EXPORTER
from gpu_pool.plan.metrics import (
    CLOUDWATCH_ADDON,
    CLOUDWATCH_ADDON_CONFIGURATION,
    dcgm_exporter_tolerations,
    dcgm_exporter_values,
)
from gpu_pool.settings import ConfigError, MetricsSettings

# The add-on's agent: its namespace and service account.
CLOUDWATCH_NAMESPACE = "amazon-cloudwatch"
CLOUDWATCH_SERVICE_ACCOUNT = "cloudwatch-agent"


class GpuMetrics(Construct):
    """GPU metrics for every GPU pool on a cluster: NVIDIA's dcgm-exporter or the Amazon
    CloudWatch Observability add-on, once per cluster.

    dcgm-exporter runs on every GPU node of the pools on the same cluster construct (added
    before or after this one), tolerating their taints, except a GPU Operator pool's, whose
    operator runs its own; no CPU node. The CloudWatch add-on runs its own exporter on the
    instance types its chart lists: a synth warning names a pool's types it misses.

    :param cluster: the EKS cluster; with a kubectl provider for dcgm-exporter's chart.
    :param settings: `gpu` (dcgm-exporter or cloudwatch) and `service_monitor`.

    With cloudwatch, plan a GPU Operator pool with `plan_pool(settings, metrics="cloudwatch")`,
    so its operator runs no second exporter (a pool planned for other metrics fails the synth).
    The add-on's agent gets its credentials through EKS Pod Identity: on an imported cluster the
    eks-pod-identity-agent add-on must run.

    What other constructs use: `exporter` (the chart) or `addon` (the add-on).
    """

    @names_itself
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: EksCluster,
        settings: MetricsSettings,
    ) -> None:
        super().__init__(scope, construct_id)
        icluster = as_icluster(cluster)
        pools = ClusterPools.of(icluster)
        if settings.gpu == "none":
            raise ConfigError(
                "metrics.gpu: 'none' installs nothing; choose 'dcgm-exporter' or 'cloudwatch', "
                "or leave GpuMetrics out"
            )
        if pools.metrics is not None:
            raise ConfigError(
                f"cluster: has GPU metrics already ({located(pools.metrics[0])}); each installs "
                "the same release or add-on, so one of them would fail to deploy: keep one"
            )
        pools.metrics = (self, settings)
        self.exporter: eks.HelmChart | None = None
        self.addon: eks.Addon | None = None
        if settings.gpu == "dcgm-exporter":
            require_kubectl(icluster, "the dcgm-exporter chart")
            self.exporter = helm_chart(
                self,
                "DcgmExporter",
                cluster=icluster,
                pin=DCGM_EXPORTER,
                release="dcgm-exporter",
                # The pools' taints at synth, when every pool on the cluster is known.
                values=dcgm_exporter_values(
                    settings.service_monitor,
                    Lazy.any(AtSynth(lambda: dcgm_exporter_tolerations(pools.plans))),
                ),
            )
        else:
            self.addon = self._cloudwatch(icluster)

    def _cloudwatch(self, cluster: eks.ICluster) -> eks.Addon:
        role, association = pod_identity_role(
            self,
            "CloudWatchAgentRole",
            cluster=cluster,
            namespace=CLOUDWATCH_NAMESPACE,
            service_account=CLOUDWATCH_SERVICE_ACCOUNT,
            description="The CloudWatch agent of the amazon-cloudwatch-observability add-on",
        )
        role.add_managed_policy(
            iam.ManagedPolicy.from_aws_managed_policy_name("CloudWatchAgentServerPolicy")
        )
        acknowledge_managed_policies(role)
        addon = owned_addon(
            eks.Addon(
                self,
                "CloudWatch",
                cluster=cluster,
                addon_name=CLOUDWATCH_ADDON,
                addon_version=CLOUDWATCH_OBSERVABILITY_ADDON_VERSION,
                configuration_values=CLOUDWATCH_ADDON_CONFIGURATION,
            )
        )
        addon.node.add_dependency(association)
        agent = pod_identity_agent(cluster, None)
        if agent is not None:
            addon.node.add_dependency(agent)
        return addon
