"""Device plugin and GPU Operator: installed where needed, reaching exactly the pool's nodes."""

import pytest
import yaml

from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan import gpu_software
from gpu_pool.settings import deep_merge
from tests.support.cfn import (
    helm_values,
    node_of,
    only,
    resources,
    synth,
)
from tests.support.chart_defaults import DEVICE_PLUGIN_CHART_DEFAULTS
from tests.support.helm import GPU_OPERATOR_CHART, leaf_paths, manifests, render_vendored
from tests.support.settings import BOTTLEROCKET, OPERATOR

HELM = "Custom::AWSCDK-EKS-HelmChart"


def chart(template, name):
    return only(
        {k: r for k, r in resources(template, HELM).items() if r["Properties"]["Chart"] == name}
    )[1]


def test_device_plugin_chart_is_pinned_in_kube_system(default_template):
    props = chart(default_template, "nvidia-device-plugin")["Properties"]
    assert props["Repository"] == "https://nvidia.github.io/k8s-device-plugin"
    assert props["Version"] == "0.20.0"
    assert props["Namespace"] == "kube-system"
    assert props["Release"] == "nvidia-device-plugin-gpu"


def test_device_plugin_selects_the_pool_and_tolerates_its_taint(default_template):
    values = helm_values(chart(default_template, "nvidia-device-plugin"))
    assert values == {
        "nodeSelector": {"gpu-pool.io/pool": "gpu"},
        "tolerations": [
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ],
    }


def test_code_knows_the_charts_recorded_defaults():
    assert gpu_software.DEVICE_PLUGIN_CHART_DEFAULTS == DEVICE_PLUGIN_CHART_DEFAULTS


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {
            "pool": {
                "labels": {"team": "ml"},
                "taints": [
                    {"key": "dedicated", "value": "gpu", "effect": "NoExecute"},
                    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                ],
            },
            "autoscaler": {"enabled": False},
        },
    ],
    ids=["defaults", "custom-labels-and-taints"],
)
def test_rendered_pod_terms_admit_the_pools_nodes_and_no_others(settings):
    template = synth(settings)
    # What the DaemonSet's pods carry: the chart's defaults with our values merged, as Helm does.
    pod_spec = deep_merge(
        DEVICE_PLUGIN_CHART_DEFAULTS, helm_values(chart(template, "nvidia-device-plugin"))
    )
    nodegroups = [r["Properties"] for r in resources(template, "AWS::EKS::Nodegroup").values()]
    gpu_nodes = [ng for ng in nodegroups if ng["AmiType"].endswith("NVIDIA")]
    cpu_nodes = [ng for ng in nodegroups if not ng["AmiType"].endswith("NVIDIA")]
    assert gpu_nodes and cpu_nodes
    for ng in gpu_nodes:
        assert pod_fits_node(pod_spec, *node_of(ng))
    for ng in cpu_nodes:
        assert not pod_fits_node(pod_spec, *node_of(ng))
    # A GPU node of some other pool (same GPU labels, none of ours) is not ours to serve.
    labels, taints = node_of(gpu_nodes[0])
    other = {k: v for k, v in labels.items() if k.startswith(("nvidia.com/", "k8s.amazonaws.com/"))}
    assert not pod_fits_node(pod_spec, other, taints)


def test_bottlerocket_pool_installs_no_device_plugin():
    template = synth(BOTTLEROCKET)
    template.resource_count_is(HELM, 0)
    _, props = only(
        {
            k: r
            for k, r in resources(template, "AWS::EKS::Nodegroup").items()
            if r["Properties"]["AmiType"].endswith("NVIDIA")
        }
    )
    assert props["Properties"]["AmiType"] == "BOTTLEROCKET_x86_64_NVIDIA"


def test_gpu_operator_mode_keeps_the_amis_driver_and_toolkit():
    template = synth(OPERATOR)
    assert not [
        r
        for r in resources(template, HELM).values()
        if r["Properties"]["Chart"] == "nvidia-device-plugin"
    ]
    props = chart(template, "gpu-operator")["Properties"]
    assert (props["Repository"], props["Version"], props["Namespace"], props["Release"]) == (
        "https://helm.ngc.nvidia.com/nvidia",
        "v26.3.1",
        "gpu-operator",
        "gpu-operator",
    )
    assert props["CreateNamespace"] is True
    toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert helm_values(chart(template, "gpu-operator")) == {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "devicePlugin": {"enabled": True},
        "daemonsets": {"tolerations": toleration},
        "node-feature-discovery": {"worker": {"tolerations": toleration}},
    }


def test_gpu_operator_on_bottlerocket_also_skips_its_device_plugin():
    from gpu_pool.plan.gpu_software import gpu_operator_values
    from gpu_pool.settings import PoolSettings

    values = gpu_operator_values(
        PoolSettings(ami_family="BOTTLEROCKET", gpu_software="gpu-operator")
    )
    assert values["devicePlugin"] == {"enabled": False}
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}


OPERATOR_CASES = {
    "default": ({}, {}),
    "bottlerocket": ({"ami_family": "BOTTLEROCKET"}, {}),
    "ultraserver-shape": ({"instance_types": ["p6e-gb200.36xlarge"]}, {"compute_domains": True}),
    "cloudwatch": ({}, {"metrics": "cloudwatch"}),
    "time-slicing": ({"sharing": {"mode": "time-slicing", "replicas": 4}}, {}),
}


@pytest.mark.parametrize(("settings", "options"), OPERATOR_CASES.values(), ids=OPERATOR_CASES)
def test_the_real_operator_chart_takes_our_values(helm, tmp_path, settings, options):
    """#38 item 8: the GPU Operator chart at the pin (vendored, tests/fixtures/charts), rendered
    by helm with the values a pool gives it: every value is one the chart (or its NFD subchart)
    declares, and its ClusterPolicy keeps the AMI's driver and toolkit, runs the plugin only
    where the AMI lacks one (Bottlerocket ships it), and tolerates the pools' GPU taint."""
    from gpu_pool.plan.gpu_software import gpu_operator_values
    from gpu_pool.plan.pool import plan_pool
    from gpu_pool.settings import PoolSettings

    pool = PoolSettings(gpu_software="gpu-operator", **settings)
    values = gpu_operator_values(pool, plan_pool(pool).sharing, **options)
    chart_values = yaml.safe_load((GPU_OPERATOR_CHART / "values.yaml").read_text())
    chart_values["node-feature-discovery"] = yaml.safe_load(
        (GPU_OPERATOR_CHART / "charts/node-feature-discovery/values.yaml").read_text()
    )
    declared = set(leaf_paths(chart_values))
    for path in leaf_paths(values):
        assert any(path[: len(d)] == d or d[: len(path)] == path for d in declared), path
    docs = manifests(
        render_vendored(helm, GPU_OPERATOR_CHART.name, "gpu-operator", "gpu-operator", values, tmp_path)
    )
    (policy,) = [d["spec"] for d in docs if d["kind"] == "ClusterPolicy"]
    assert (policy["driver"]["enabled"], policy["toolkit"]["enabled"]) == (False, False)
    assert policy["devicePlugin"]["enabled"] is (pool.ami_family != "BOTTLEROCKET")
    gpu_taint = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert gpu_taint in policy["daemonsets"]["tolerations"]
    (worker,) = [
        d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("-worker")
    ]
    assert gpu_taint in worker["spec"]["template"]["spec"]["tolerations"]

