"""A CDK app of your own that installs gpu-pool and composes its constructs.

One stack creates a VPC and an EKS cluster with an inference pool and a training pool, Cluster
Autoscaler for both, a Spot batch pool that Karpenter scales, each behind a taint of its own,
NVIDIA's DCGM exporter for GPU metrics on all of them, and the EKS node monitoring agent whose
node conditions the pools' repair acts on. A second stack, in another account and region, adds
a pool to a cluster another team runs (imported by name with its kubectl provider), which runs
the agent already.
"""

import json

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer
from constructs import Construct

from gpu_pool import (
    ClusterAutoscaler,
    GpuMetrics,
    GpuNodePool,
    Karpenter,
    KarpenterNodePool,
    MetricsSettings,
    PoolSettings,
    Taint,
    node_monitoring_agent,
)

GPU_TAINT = Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")


class MlPlatformStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, env: cdk.Environment) -> None:
        super().__init__(scope, construct_id, env=env)
        vpc = ec2.Vpc(self, "Vpc", max_azs=3, nat_gateways=1)
        cluster = eks.Cluster(
            self,
            "Cluster",
            # Karpenter's IAM conditions contain the name: give the cluster one.
            cluster_name="ml-platform",
            version=eks.KubernetesVersion.V1_35,
            vpc=vpc,
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=KubectlV35Layer(self, "KubectlLayer")
            ),
        )
        cluster.add_nodegroup_capacity(
            "System",
            instance_types=[ec2.InstanceType("t3.medium")],
            min_size=2,
            labels={"role": "system"},
        )
        inference = GpuNodePool(
            self,
            "Inference",
            cluster=cluster,
            subnets=vpc.private_subnets,
            settings=PoolSettings(
                name="inference",
                instance_types=["g6e.xlarge", "g5.xlarge"],
                # A taint per pool: a pod tolerates the pools of one provisioner only, so
                # Cluster Autoscaler and Karpenter never both launch a node for it.
                taints=[GPU_TAINT, Taint(key="dedicated", value="inference")],
            ),
        )
        GpuNodePool(
            self,
            "Training",
            cluster=cluster,
            subnets=vpc.private_subnets,
            settings=PoolSettings(
                name="training",
                instance_types=["p5.48xlarge"],
                max_size=2,
                labels={"workload": "training"},
                taints=[GPU_TAINT, Taint(key="dedicated", value="training")],
            ),
            tags={"cost-center": "research"},
        )
        # Version, region and cluster name come from the cluster; the pod runs on system nodes.
        ClusterAutoscaler(self, "Autoscaler", cluster=cluster, node_selector={"role": "system"})
        # Karpenter launches the batch pool's Spot nodes straight from pending pods.
        karpenter = Karpenter(self, "Karpenter", cluster=cluster, node_selector={"role": "system"})
        KarpenterNodePool(
            self,
            "Batch",
            karpenter=karpenter,
            subnets=vpc.private_subnets,
            settings=PoolSettings(
                name="batch",
                provisioner="karpenter",
                instance_types=["g6.xlarge", "g6.2xlarge", "g5.xlarge"],
                capacity_type="SPOT",
                labels={"workload": "batch"},
                taints=[GPU_TAINT, Taint(key="dedicated", value="batch")],
            ),
        )
        # Finds a broken GPU and sets the node condition repair replaces or reboots it on.
        node_monitoring_agent(self, cluster)
        # GPU metrics of every pool's nodes, in Prometheus format on port 9400.
        GpuMetrics(
            self, "GpuMetrics", cluster=cluster, settings=MetricsSettings(gpu="dcgm-exporter")
        )
        cdk.CfnOutput(
            self, "InferenceNodeSelector", value=json.dumps(inference.workload_node_selector)
        )


class PartnerClusterStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, env: cdk.Environment) -> None:
        super().__init__(scope, construct_id, env=env)
        kubectl = eks.KubectlProvider.from_kubectl_provider_attributes(
            self,
            "Kubectl",
            service_token="arn:aws:lambda:eu-west-1:222222222222:function:kubectl-onEvent",
            role=iam.Role.from_role_arn(
                self, "KubectlRole", "arn:aws:iam::222222222222:role/kubectl", mutable=False
            ),
        )
        cluster = eks.Cluster.from_cluster_attributes(
            self, "Cluster", cluster_name="partner-prod", kubectl_provider=kubectl
        )
        subnet = ec2.Subnet.from_subnet_attributes(
            self, "Subnet", subnet_id="subnet-0aaaaaaaaaaaaaaaa", availability_zone="eu-west-1a"
        )
        GpuNodePool(
            self,
            "Inference",
            cluster=cluster,
            subnets=[subnet],
            settings=PoolSettings(name="inference", instance_types=["g6.xlarge"]),
        )
        # An imported cluster does not say its version: name it (it picks the image).
        ClusterAutoscaler(self, "Autoscaler", cluster=cluster, kubernetes_version="1.35")
        # The partner team installed the node monitoring agent add-on on their cluster.
        cdk.Annotations.of(self).acknowledge_warning(
            "gpu-pool:GP-LIB-04", "partner-prod runs eks-node-monitoring-agent already"
        )


app = cdk.App()
MlPlatformStack(app, "MlPlatform", env=cdk.Environment(account="111111111111", region="us-east-1"))
PartnerClusterStack(
    app, "PartnerCluster", env=cdk.Environment(account="222222222222", region="eu-west-1")
)
app.synth()
