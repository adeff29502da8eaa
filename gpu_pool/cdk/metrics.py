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

from collections.abc import Sequence

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.charts import helm_chart
from gpu_pool.cdk.pod_identity import pod_identity_agent, pod_identity_role
from gpu_pool.model.versions import CLOUDWATCH_OBSERVABILITY_ADDON_VERSION, DCGM_EXPORTER
from gpu_pool.plan.metrics import CLOUDWATCH_ADDON_CONFIGURATION, dcgm_exporter_values
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.settings import MetricsSettings

CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"
# The add-on's agent: its namespace and service account.
CLOUDWATCH_NAMESPACE = "amazon-cloudwatch"
CLOUDWATCH_SERVICE_ACCOUNT = "cloudwatch-agent"


class GpuMetrics(Construct):
    """The cluster's GPU metrics: dcgm-exporter (`exporter`) or the CloudWatch add-on
    (`addon`), for the pools in `plans`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        settings: MetricsSettings,
        plans: Sequence[PoolPlan],
    ) -> None:
        super().__init__(scope, construct_id)
        self.exporter: eks.HelmChart | None = None
        self.addon: eks.Addon | None = None
        if settings.gpu == "dcgm-exporter":
            self.exporter = helm_chart(
                self,
                "DcgmExporter",
                cluster=cluster,
                pin=DCGM_EXPORTER,
                release="dcgm-exporter",
                values=dcgm_exporter_values(plans, settings.service_monitor),
            )
        elif settings.gpu == "cloudwatch":
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
            self.addon = eks.Addon(
                self,
                "CloudWatch",
                cluster=cluster,
                addon_name=CLOUDWATCH_ADDON,
                addon_version=CLOUDWATCH_OBSERVABILITY_ADDON_VERSION,
                configuration_values=CLOUDWATCH_ADDON_CONFIGURATION,
            )
            self.addon.node.add_dependency(association)
            agent = pod_identity_agent(cluster, None)
            if agent is not None:
                self.addon.node.add_dependency(agent)
