"""The EKS node monitoring agent: the add-on that reports the node conditions repair acts on."""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.cdk.registry import EksCluster, as_icluster, owned_addon
from gpu_pool.model.versions import NODE_MONITORING_AGENT_ADDON_VERSION
from gpu_pool.plan.repair import NODE_MONITORING_AGENT_ADDON, NODE_MONITORING_AGENT_CONFIGURATION


def node_monitoring_agent(
    scope: Construct, cluster: EksCluster, construct_id: str = "NodeMonitoringAgent"
) -> eks.Addon:
    """The add-on `eks-node-monitoring-agent` at the pinned version, on every node whatever its
    taints (plan/repair.py): the agent whose node conditions pool repair acts on. GpuPoolStack
    adds it; a library app adds it once per cluster (else GP-LIB-04 warns at a repairing pool).
    It gets no IAM role: the agent calls no AWS API (in aws/eks-node-monitoring-agent v1.7.0
    only e2e/ and hack/ import an AWS service client; the agent reads the node's logs and
    instance metadata), and writes node conditions and events through the Kubernetes API as its
    service account, which the chart gives no role. `construct_id`: another, to add it to a
    second cluster in the same scope."""
    return owned_addon(
        eks.Addon(
            scope,
            construct_id,
            cluster=as_icluster(cluster),
            addon_name=NODE_MONITORING_AGENT_ADDON,
            addon_version=NODE_MONITORING_AGENT_ADDON_VERSION,
            configuration_values=NODE_MONITORING_AGENT_CONFIGURATION,
        )
    )
