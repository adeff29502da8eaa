"""Karpenter for one cluster: its CRDs, its controller, and the AWS pieces it needs.

Installed once per cluster when any pool uses `provisioner: karpenter`: the CRD chart first
(Helm never upgrades CRDs bundled in a chart), then the controller chart, whose pod gets AWS
credentials through EKS Pod Identity (service account kube-system/karpenter), runs on the
system nodes, and reads the interruption queue. Nodes Karpenter launches use one node role,
admitted to the cluster by an EC2_LINUX access entry.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Lazy
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.arguments import require_kubectl
from gpu_pool.cdk.autoscaling.controller import install_controller
from gpu_pool.cdk.gpu_software.charts import helm_chart
from gpu_pool.cdk.karpenter.iam import controller_policies
from gpu_pool.cdk.karpenter.interruption import InterruptionQueue
from gpu_pool.cdk.nag.acknowledge import acknowledge_wildcard_resources
from gpu_pool.cdk.nodes.node_role import node_role
from gpu_pool.cdk.registry import (
    AtSynth,
    ClusterPools,
    EksCluster,
    as_icluster,
    created_cluster_version,
    literal_cluster_name,
)
from gpu_pool.cdk.report import names_itself, report
from gpu_pool.checks.controllers import (
    check_chart_registry_login,
    check_karpenter_version,
    check_node_selector,
)
from gpu_pool.checks.syntax import exact_versions
from gpu_pool.model.versions import KARPENTER, KARPENTER_CRD
from gpu_pool.plan.dra import karpenter_dra_settings
from gpu_pool.plan.repair import karpenter_repair_settings
from gpu_pool.settings import ConfigError, KarpenterSettings

SERVICE_ACCOUNT = "karpenter"
# Requests equal to limits: Guaranteed QoS, so the kubelet evicts the controller last under memory
# pressure on a small system node (while it is gone no GPU node launches). The chart sets none
# (charts/karpenter/values.yaml `controller.resources: {}`); these are the getting-started
# values (website/content/en/docs/getting-started/getting-started-with-karpenter/scripts/
# step08-apply-helm-chart.sh, aws/karpenter-provider-aws v1.14.1).
CONTROLLER_RESOURCES = {
    "requests": {"cpu": "1", "memory": "1Gi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}


def karpenter_values(
    cluster_name: str, queue_name: str, node_selector: Mapping[str, str], pools: ClusterPools
) -> dict[str, object]:
    """The controller chart's values: which cluster and queue, DRA support when a Karpenter pool
    of the cluster uses the DRA driver and the nodeRepair gate when one repairs (read from the
    registry at synth, so pools added after the controller count), its resources, and where it
    runs (the chart's own affinity already keeps it off nodes Karpenter launched).

    Every upgrade of the release gets these values whole: aws-cdk-lib's Helm handler runs
    `helm upgrade --install ... --values <file>` and never --reuse-values
    (custom-resource-handlers/dist/aws-eks-v2/kubectl-handler/helm/__init__.py, aws-cdk-lib
    2.275.0), and Helm reuses a release's old values only with --reuse-values or when an
    upgrade brings none. So a cluster deployed with Karpenter 1.14 keeps no old
    ignoreDRARequests default that would fail enableDRA's validation, the trap Karpenter's DRA
    page documents for `helm upgrade --reuse-values`."""
    settings = {"clusterName": cluster_name, "interruptionQueue": queue_name}
    return {
        "settings": Lazy.any(
            AtSynth(
                lambda: {
                    **settings,
                    **karpenter_dra_settings(pools.plans),
                    **karpenter_repair_settings(p.repair for p in pools.plans),
                }
            )
        ),
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "controller": {"resources": CONTROLLER_RESOURCES},
        "nodeSelector": dict(node_selector),
    }


class Karpenter(Construct):
    """Karpenter on an EKS cluster, for `KarpenterNodePool`s to render their pools into.

    :param cluster: the EKS cluster, with a kubectl provider, access entries and a literal name.
    :param settings: chart version pin and node selector. Default: KarpenterSettings().
    :param kubernetes_version: the cluster's minor, e.g. "1.36". Default: the eks.Cluster's.
    :param node_selector: where the controller runs. Default: settings.node_selector, else any.
    :param cluster_security_group_id: the group the nodes join. Default: the eks.Cluster's.
    :param install_pod_identity_agent: add the Pod Identity agent. Default: for an eks.Cluster.

    The cluster's name must be literal (an imported cluster's, or `cluster_name=` on one you
    create): the controller's IAM conditions contain it. An imported cluster needs
    `cluster_security_group_id`, and its kubectl handler role must log in to public.ecr.aws
    (AmazonElasticContainerRegistryPublicReadOnly), where the charts are: a synth warning says
    so. The Pod Identity agent add-on is one per cluster, shared with ClusterAutoscaler.

    What pools use: `cluster`, `node_role`, `security_group_id`; and `chart`, `queue`, `role`.
    """

    @names_itself
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: EksCluster,
        settings: KarpenterSettings | None = None,
        kubernetes_version: str | None = None,
        node_selector: Mapping[str, str] | None = None,
        cluster_security_group_id: str | None = None,
        install_pod_identity_agent: bool | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        settings = settings or KarpenterSettings()
        self.cluster = cluster = as_icluster(cluster)
        require_kubectl(cluster, "Karpenter's charts")
        cluster_name = literal_cluster_name(cluster)
        if cluster_name is None:
            raise ConfigError(
                "the cluster's name is only known at deploy time; give the cluster a "
                "cluster_name (Karpenter's IAM condition keys contain it)"
            )
        if cluster_security_group_id is None and not isinstance(cluster, eks.Cluster):
            raise ConfigError(
                "cluster_security_group_id is required for an imported cluster (its "
                "nodes join that group): pass resourcesVpcConfig.clusterSecurityGroupId"
            )
        self.security_group_id: str = cluster_security_group_id or cluster.cluster_security_group_id
        node_selector = settings.node_selector if node_selector is None else node_selector
        minor = kubernetes_version or created_cluster_version(cluster)
        findings = (
            list(exact_versions("karpenter", {"chart_version": settings.chart_version}))
            + check_karpenter_version(settings.chart_version, minor)
            + check_node_selector(node_selector, (), "karpenter")
        )
        provider = cluster.kubectl_provider
        # A KubectlProvider this app builds (an eks.Cluster's, or GpuPoolStack's for an
        # existing cluster) gives its handler role the ECR Public policy itself (aws-cdk-lib
        # aws-eks-v2 kubectl-provider.ts, condition HasEcrPublic); an imported one may not.
        if not isinstance(cluster, eks.Cluster) and not isinstance(provider, eks.KubectlProvider):
            role = provider.role if provider is not None else None
            findings += check_chart_registry_login(role.role_arn if role is not None else None)
        report(self, findings)
        ClusterPools.of(cluster).add_controller(self, "karpenter", node_selector)

        self.node_role = node_role(
            self, "NodeRole", f"Nodes Karpenter launches in EKS cluster {cluster_name}"
        )
        eks.AccessEntry(
            self,
            "NodeAccessEntry",
            cluster=cluster,
            principal=self.node_role.role_arn,
            access_entry_type=eks.AccessEntryType.EC2_LINUX,
            access_policies=[],
        )
        interruption = InterruptionQueue(self, "Interruption")
        self.queue = interruption.queue

        self.crd_chart = helm_chart(
            self,
            "CrdChart",
            cluster=cluster,
            pin=KARPENTER_CRD,
            version=settings.chart_version,
            release="karpenter-crd",
        )
        # CRDs before the controller that watches them.
        self.role, self.chart = install_controller(
            self,
            cluster=cluster,
            pin=KARPENTER,
            release="karpenter",
            service_account=SERVICE_ACCOUNT,
            role_id="ControllerRole",
            description=f"Karpenter controller for EKS cluster {cluster_name}",
            version=settings.chart_version,
            values=karpenter_values(
                cluster_name, self.queue.queue_name, node_selector, ClusterPools.of(cluster)
            ),
            install_pod_identity_agent=install_pod_identity_agent,
            after=(self.crd_chart,),
        )
        for name, statements in controller_policies(
            cluster_name, self.node_role.role_arn, self.queue.queue_arn
        ).items():
            policy = iam.ManagedPolicy(
                self, f"{name}Policy", statements=statements, roles=[self.role]
            )
            acknowledge_wildcard_resources(
                policy,
                "Karpenter's own policy (v1.15 getting-started): launches and deletions are "
                "limited to resources tagged for this cluster and a NodePool; reads EC2, "
                "pricing and IAM allow on no narrower resource",
            )
