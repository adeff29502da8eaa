"""Constructs as a library user writes them in their own app."""

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam


def user_cluster(stack: Stack, name: str | None = None) -> eks.Cluster:
    """A cluster as users create it; without `name` its name is a token (Ref)."""
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    return eks.Cluster(
        stack,
        "Cluster",
        cluster_name=name,
        version=eks.KubernetesVersion.V1_35,
        default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
        default_capacity=0,
        kubectl_provider_options=eks.KubectlProviderOptions(
            kubectl_layer=KubectlV35Layer(stack, "KubectlLayer")
        ),
    )


def imported_cluster(stack: Stack) -> tuple[eks.ICluster, ec2.ISubnet]:
    """A cluster another team runs, imported by name with its kubectl provider, and a subnet
    with a literal zone (no lookups: it synthesizes fast and without an account)."""
    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        stack,
        "Kubectl",
        service_token="arn:aws:lambda:us-east-1:123456789012:function:kubectl",
        role=iam.Role.from_role_arn(stack, "KubectlRole", "arn:aws:iam::123456789012:role/k"),
    )
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "C", cluster_name="platform", kubectl_provider=provider
    )
    subnet = ec2.Subnet.from_subnet_attributes(
        stack, "Subnet", subnet_id="subnet-0aaaaaaaaaaaaaaaa", availability_zone="us-east-1a"
    )
    return cluster, subnet
