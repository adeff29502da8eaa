"""Two clusters in one stack: each has its own pools, names and controllers. A registry keyed by
stack instead of cluster would refuse the second cluster's pool `gpu` and leave that cluster
without the Pod Identity agent its autoscaler needs."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Template
from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

from gpu_pool import ClusterAutoscaler, GpuNodePool, PoolSettings
from tests.support.cfn import resources, unvalidated_app


@pytest.fixture(scope="module")
def synthesized() -> tuple[Template, list[str]]:
    """The template, and the two clusters' logical ids."""
    stack = cdk.Stack(unvalidated_app(), "TwoClusters")
    cluster_ids = []
    layer = KubectlV35Layer(stack, "KubectlLayer")
    for name in ("Blue", "Green"):
        cluster = eks.Cluster(
            stack,
            name,
            cluster_name=name.lower(),
            version=eks.KubernetesVersion.V1_35,
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            kubectl_provider_options=eks.KubectlProviderOptions(kubectl_layer=layer),
        )
        cluster_ids.append(stack.get_logical_id(cluster.node.default_child))
        # The same pool name on both: names are unique per cluster, not per stack.
        GpuNodePool(
            stack,
            f"{name}Pool",
            cluster=cluster,
            subnets=cluster.vpc.private_subnets,
            settings=PoolSettings(name="gpu"),
        )
        ClusterAutoscaler(stack, f"{name}Autoscaler", cluster=cluster)
    return Template.from_stack(stack), sorted(cluster_ids)


def _cluster_of(value: object) -> str:
    """The logical id of the cluster a ClusterName property refers to."""
    assert isinstance(value, dict) and "Ref" in value, value
    return str(value["Ref"])


def test_each_cluster_gets_its_own_pod_identity_agent(synthesized):
    template, clusters = synthesized
    agents = [
        r["Properties"]
        for r in resources(template, "AWS::EKS::Addon").values()
        if r["Properties"]["AddonName"] == "eks-pod-identity-agent"
    ]
    assert sorted(_cluster_of(a["ClusterName"]) for a in agents) == clusters


def test_each_cluster_gets_its_pool_and_its_autoscaler(synthesized):
    template, clusters = synthesized
    nodegroups = resources(template, "AWS::EKS::Nodegroup").values()
    gpu_groups = [
        n for n in nodegroups if n["Properties"]["Labels"].get("gpu-pool.io/pool") == "gpu"
    ]
    assert sorted(_cluster_of(n["Properties"]["ClusterName"]) for n in gpu_groups) == clusters
    associations = resources(template, "AWS::EKS::PodIdentityAssociation").values()
    autoscalers = [
        a for a in associations if a["Properties"]["ServiceAccount"] == "cluster-autoscaler"
    ]
    assert sorted(_cluster_of(a["Properties"]["ClusterName"]) for a in autoscalers) == clusters
