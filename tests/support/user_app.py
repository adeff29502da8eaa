"""Constructs as a library user writes them in their own app."""

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks


def user_cluster(stack: Stack) -> eks.Cluster:
    """A cluster as users create it, without a name: its name is a token (Ref)."""
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    return eks.Cluster(
        stack,
        "Cluster",
        version=eks.KubernetesVersion.V1_35,
        default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
        default_capacity=0,
        kubectl_provider_options=eks.KubectlProviderOptions(
            kubectl_layer=KubectlV35Layer(stack, "KubectlLayer")
        ),
    )
