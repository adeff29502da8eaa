"""The cluster: aws_eks_v2, matching kubectl layer, no default capacity; or an imported one."""

import importlib

import pytest

from gpu_pool.model.versions import KUBERNETES_RELEASES
from tests.support.cfn import only, resources


def test_new_cluster_defaults(default_template):
    _, cluster = only(resources(default_template, "AWS::EKS::Cluster"))
    assert cluster["Properties"]["Name"] == "gpu-pool"
    assert cluster["Properties"]["Version"] == "1.36"
    assert cluster["Properties"]["AccessConfig"]["AuthenticationMode"] == "API"


def test_kubectl_layer_matches_the_cluster_minor(default_template):
    layers = [
        r["Properties"] for r in resources(default_template, "AWS::Lambda::LayerVersion").values()
    ]
    # e.g. "/opt/kubectl/kubectl 1.36.0; /opt/helm/helm 4.1.3"
    assert any("/opt/kubectl/kubectl 1.36." in (p.get("Description") or "") for p in layers), layers


@pytest.mark.parametrize("minor", list(KUBERNETES_RELEASES))
def test_every_release_maps_to_its_own_kubectl_layer_package(minor):
    release = KUBERNETES_RELEASES[minor]
    module = importlib.import_module(release.kubectl_layer_module)
    assert hasattr(module, release.kubectl_layer_class)
    assert release.kubectl_layer_class == f"KubectlV{minor.split('.')[1]}Layer"


def test_no_default_node_group_besides_the_system_group(default_template):
    groups = [r["Properties"] for r in resources(default_template, "AWS::EKS::Nodegroup").values()]
    assert sorted(g["AmiType"] for g in groups) == [
        "AL2023_x86_64_NVIDIA",
        "AL2023_x86_64_STANDARD",
    ]


def test_imported_cluster_uses_the_given_kubectl_provider(existing_template):
    existing_template.resource_count_is("AWS::EKS::Cluster", 0)
    existing_template.resource_count_is("AWS::EC2::VPC", 0)
    charts = resources(existing_template, "Custom::AWSCDK-EKS-HelmChart").values()
    assert {c["Properties"]["ServiceToken"] for c in charts} == {
        "arn:aws:lambda:eu-west-1:123456789012:function:kubectl-onEvent"
    }
    assert {c["Properties"]["ClusterName"] for c in charts} == {"platform-prod"}


def test_zones_pin_the_vpc_to_them(multi_template):
    subnets = resources(multi_template, "AWS::EC2::Subnet").values()
    assert {s["Properties"]["AvailabilityZone"] for s in subnets} == {"us-east-1a", "us-east-1b"}
