"""Benchmark reference: a cluster and one plain GPU node group, written with aws-cdk-lib alone.

What a team would write without gpu-pool (and what does not schedule GPU pods from zero):
the same VPC shape, cluster, kubectl layer and one g5.xlarge node group. With the environment
variable REFERENCE_NAG=1 it also validates itself with cdk-nag's AwsSolutions pack, as the app
does, so the two do the same work; its findings (nothing acknowledges them) are reported and
the synth still counts.
"""

import os
import sys

import aws_cdk as cdk
import cdk_nag
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
if os.environ.get("REFERENCE_NAG") == "1":
    cdk.Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(app))
    try:
        app.synth()
    except RuntimeError as err:  # the validation report: findings, not a failed synth
        print(str(err).splitlines()[0], file=sys.stderr)
else:
    app.synth()
