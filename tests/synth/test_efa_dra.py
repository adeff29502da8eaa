"""The EFA DRA driver (`efa_software: dra-driver`, issue #37 item 4) as synthesized and as its
real chart (tests/fixtures/charts/aws-dranet-1.0.0, rendered by the kubectl layer's helm)
deploys it: one release whose DaemonSet reaches exactly the EFA DRA pool's nodes, tolerating
their taints, and the EFA device plugin only on the other EFA pool's nodes."""

import pytest

from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.model.versions import NVIDIA_DRA_DRIVER
from tests.support.cfn import helm_values, node_of, only, resources
from tests.support.dra import POOL_LABEL
from tests.support.helm import helm_binary, manifests, render_vendored

HELM = "Custom::AWSCDK-EKS-HelmChart"
CHART = "aws-dranet-1.0.0"


def charts(template, name):
    return {k: r for k, r in resources(template, HELM).items() if r["Properties"]["Chart"] == name}


def nodes(template):
    """Each node group's (pool, labels, taints); the system group's pool is None."""
    found = []
    for resource in resources(template, "AWS::EKS::Nodegroup").values():
        labels, taints = node_of(resource["Properties"])
        found.append((labels.get(POOL_LABEL), labels, taints))
    return found


@pytest.fixture(scope="module")
def helm(tmp_path_factory):
    return helm_binary(tmp_path_factory.mktemp("helm"))


def test_one_pinned_aws_dranet_release_beside_the_nvidia_dra_driver(efa_dra_template):
    _, chart = only(charts(efa_dra_template, "aws-dranet"))
    props = chart["Properties"]
    assert (props["Repository"], props["Version"], props["Namespace"], props["Release"]) == (
        "https://aws.github.io/eks-charts",
        "1.0.0",
        "kube-system",
        "aws-dranet",
    )
    assert helm_values(chart) == {
        "supportedInstanceLabels": {"keys": [POOL_LABEL], "values": ["dra"]},
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
        ],
    }
    only(charts(efa_dra_template, NVIDIA_DRA_DRIVER.chart))


def test_only_the_device_plugin_pool_has_an_efa_device_plugin(efa_dra_template):
    _, chart = only(charts(efa_dra_template, "aws-efa-k8s-device-plugin"))
    assert chart["Properties"]["Release"] == "aws-efa-k8s-device-plugin-plugin"


def test_the_rendered_driver_reaches_exactly_the_efa_dra_pools_nodes(
    efa_dra_template, helm, tmp_path
):
    values = helm_values(only(charts(efa_dra_template, "aws-dranet"))[1])
    rendered = render_vendored(helm, CHART, "aws-dranet", "kube-system", values, tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    docs = manifests(rendered)
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"] == [
        "efa.networking.k8s.aws"
    ]
    pod = daemonset["spec"]["template"]["spec"]
    admitted = {pool: pod_fits_node(pod, *node) for pool, *node in nodes(efa_dra_template)}
    assert admitted == {"dra": True, "plugin": False, None: False}
