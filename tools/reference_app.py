"""Benchmark reference: a cluster and one plain GPU node group, written with aws-cdk-lib alone.

What a team would write without gpu-pool (and what does not schedule GPU pods from zero):
the same VPC shape, cluster, kubectl layer and one g5.xlarge node group.
"""

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

app = cdk.App()
stack = cdk.Stack(app, "Reference")
vpc = ec2.Vpc(stack, "Vpc", nat_gateways=1, max_azs=3)
cluster = eks.Cluster(
    stack,
    "Cluster",
    version=eks.KubernetesVersion.V1_35,
    vpc=vpc,
    default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
    default_capacity=0,
    kubectl_provider_options=eks.KubectlProviderOptions(kubectl_layer=KubectlV35Layer(stack, "L")),
)
cluster.add_nodegroup_capacity(
    "Gpu",
    instance_types=[ec2.InstanceType("g5.xlarge")],
    ami_type=eks.NodegroupAmiType.AL2023_X86_64_NVIDIA,
    min_size=0,
    desired_size=0,
    max_size=8,
    disk_size=200,
)
app.synth()
