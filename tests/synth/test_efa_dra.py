"""The EFA DRA driver (`efa_software: dra-driver`, issue #37 item 4) as synthesized and as its
real chart (tests/fixtures/charts/aws-dranet-1.0.0, rendered by the kubectl layer's helm)
deploys it: one release whose DaemonSet reaches exactly the EFA DRA pool's nodes, tolerating
their taints, and the EFA device plugin only on the other EFA pool's nodes."""


from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.model.versions import NVIDIA_DRA_DRIVER
from tests.support.cfn import helm_values, only, pool_nodes, releases
from tests.support.dra import POOL_LABEL
from tests.support.helm import manifests, render_vendored

CHART = "aws-dranet-1.0.0"



def test_one_pinned_aws_dranet_release_beside_the_nvidia_dra_driver(efa_dra_template):
    _, chart = only(releases(efa_dra_template, "aws-dranet"))
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
    only(releases(efa_dra_template, NVIDIA_DRA_DRIVER.chart))


def test_only_the_device_plugin_pool_has_an_efa_device_plugin(efa_dra_template):
    _, chart = only(releases(efa_dra_template, "aws-efa-k8s-device-plugin"))
    assert chart["Properties"]["Release"] == "aws-efa-k8s-device-plugin-plugin"


def test_the_rendered_driver_reaches_exactly_the_efa_dra_pools_nodes(
    efa_dra_template, helm, tmp_path
):
    values = helm_values(only(releases(efa_dra_template, "aws-dranet"))[1])
    rendered = render_vendored(helm, CHART, "aws-dranet", "kube-system", values, tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    docs = manifests(rendered)
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"] == [
        "efa.networking.k8s.aws"
    ]
    pod = daemonset["spec"]["template"]["spec"]
    admitted = {pool: pod_fits_node(pod, *node) for pool, *node in pool_nodes(efa_dra_template)}
    assert admitted == {"dra": True, "plugin": False, None: False}
