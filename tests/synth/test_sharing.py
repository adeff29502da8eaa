"""Shared GPUs (#23 items 2, 3): each pool's device plugin carries its own config and only its
nodes read it; Cluster Autoscaler's zero-node template advertises what the nodes will."""


import pytest
import yaml

from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.gpu_software import _operator_device_plugin_pod
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings, deep_merge
from tests.support.cfn import (
    helm_values,
    node_of,
    resources,
    synth,
    tags_by_nodegroup,
)
from tests.support.chart_defaults import DEVICE_PLUGIN_CHART_DEFAULTS
from tests.support.helm import DEVICE_PLUGIN_CHART, helm_template
from tests.support.settings import MIXED_LAYOUT, SHARING

HELM = "Custom::AWSCDK-EKS-HelmChart"
CONFIG_LABEL = "nvidia.com/device-plugin.config"
RESOURCE = "k8s.io/cluster-autoscaler/node-template/resources/"
GPU_LABEL = "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator"
@pytest.fixture(scope="module")
def template():
    return synth(SHARING)


def charts(template):
    return [r["Properties"] for r in resources(template, HELM).values()]


def plugin_charts(template):
    """(release, the device plugin pods' scheduling terms, its configs, its default config)
    for every chart that runs a device plugin: as Helm merges the values over the chart's
    defaults, or as the GPU Operator places its plugin."""
    found = []
    for props in charts(template):
        values = helm_values({"Properties": props})
        if props["Chart"] == "nvidia-device-plugin":
            pod = deep_merge(DEVICE_PLUGIN_CHART_DEFAULTS, values)
            config = values.get("config", {})
            found.append((props["Release"], pod, config.get("map", {}), config.get("default")))
        elif props["Chart"] == "gpu-operator":
            config = values["devicePlugin"].get("config", {})
            pod = _operator_device_plugin_pod(values)
            found.append((props["Release"], pod, config.get("data", {}), config.get("default")))
    return found


def gpu_nodegroups(template):
    return [
        r["Properties"]
        for r in resources(template, "AWS::EKS::Nodegroup").values()
        if r["Properties"]["AmiType"].endswith("NVIDIA")
    ]


def test_each_sharing_pools_plugin_carries_its_own_config(template):
    configs = {
        release: (yaml.safe_load(text) for text in config_map.values())
        for release, _, config_map, _ in plugin_charts(template)
    }
    assert {release: list(docs) for release, docs in configs.items()} == {
        "nvidia-device-plugin-slices": [
            {
                "version": "v1",
                "flags": {"migStrategy": "none"},
                "sharing": {
                    "timeSlicing": {
                        "renameByDefault": False,
                        "failRequestsGreaterThanOne": True,
                        "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
                    }
                },
            }
        ],
        "nvidia-device-plugin-shared": [
            {
                "version": "v1",
                "flags": {"migStrategy": "none"},
                "sharing": {
                    "timeSlicing": {
                        "renameByDefault": True,
                        "failRequestsGreaterThanOne": True,
                        "resources": [{"name": "nvidia.com/gpu", "replicas": 8}],
                    }
                },
            }
        ],
        "nvidia-device-plugin-whole": [],
        "gpu-operator": [{"version": "v1", "flags": {"migStrategy": "mixed"}}],
    }


def test_the_charts_config_is_named_after_the_pool_and_is_its_default(template):
    defaults = {
        release: (sorted(config_map), default)
        for release, _, config_map, default in plugin_charts(template)
    }
    assert defaults == {
        "nvidia-device-plugin-slices": (["slices"], "slices"),
        "nvidia-device-plugin-shared": (["shared"], "shared"),
        "nvidia-device-plugin-whole": ([], None),
        "gpu-operator": (["mig"], "mig"),
    }


def test_every_gpu_node_reads_exactly_its_pools_config(template):
    plugins = plugin_charts(template)
    groups = gpu_nodegroups(template)
    assert len(groups) == 5
    for group in groups:
        labels, taints = node_of(group)
        pool = labels["gpu-pool.io/pool"]
        running = [p for p in plugins if p[1] is not None and pod_fits_node(p[1], labels, taints)]
        assert len(running) == 1, (group["InstanceTypes"], [p[0] for p in running])
        _, _, config_map, default = running[0]
        if pool == "whole":
            assert CONFIG_LABEL not in labels and config_map == {} and default is None
            continue
        # The config-manager reads the config its node's label names; that is the pool's own,
        # in the one plugin that runs there, which is also that plugin's default.
        assert labels[CONFIG_LABEL] == pool == default
        assert list(config_map) == [pool]


def test_the_gpu_operator_partitions_the_mig_pools_gpus_with_its_layout(template):
    (operator,) = [p for p in charts(template) if p["Chart"] == "gpu-operator"]
    values = helm_values({"Properties": operator})
    assert values["mig"] == {"strategy": "mixed"}
    config = values["migManager"]["config"]
    assert (config["create"], config["name"], config["default"]) == (
        True,
        "gpu-pool-mig-parted-config",
        "all-disabled",
    )
    assert yaml.safe_load(config["data"]["config.yaml"]) == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "mig": [{"devices": "all", "mig-enabled": True, "mig-devices": MIXED_LAYOUT}],
        },
    }
    (mig_group,) = [g for g in gpu_nodegroups(template) if g["InstanceTypes"] == ["p5.48xlarge"]]
    assert mig_group["Labels"]["nvidia.com/mig.config"] == "mig"


def template_tags(template):
    return {types: tags for (types, _), tags in tags_by_nodegroup(template).items()}


@pytest.mark.parametrize(
    ("instance_type", "resources", "gpu_label"),
    [
        # Time-slicing: GPUs x replicas, as nvidia.com/gpu.
        ("g6.xlarge", {"nvidia.com/gpu": "4"}, "nvidia-l4"),
        ("g6.12xlarge", {"nvidia.com/gpu": "16"}, "nvidia-l4"),
        # Renamed: the shares under their own name, no whole GPU, and no CA GPU label (a node
        # with it and zero nvidia.com/gpu stays unready to CA).
        ("g5.xlarge", {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "8"}, None),
        ("g6e.xlarge", {"nvidia.com/gpu": "1"}, "nvidia-l40s"),
        # Mixed MIG: each profile x 8 GPUs.
        (
            "p5.48xlarge",
            {
                "nvidia.com/gpu": "0",
                "nvidia.com/mig-3g.40gb": "8",
                "nvidia.com/mig-2g.20gb": "8",
                "nvidia.com/mig-1g.10gb": "16",
            },
            None,
        ),
    ],
)
def test_node_template_tags_advertise_what_the_nodes_will(
    template, instance_type, resources, gpu_label
):
    tags = template_tags(template)[(instance_type,)]
    advertised = {
        k.removeprefix(RESOURCE): v
        for k, v in tags.items()
        if k.startswith(RESOURCE) and k != RESOURCE + "ephemeral-storage"
    }
    assert advertised == resources
    assert tags.get(GPU_LABEL) == gpu_label


def test_the_real_chart_renders_each_pools_config_for_its_nodes_only(template, helm, tmp_path):
    """Rendered by helm through the chart's own templates: each release's ConfigMap holds its
    pool's config, its config-manager defaults to it, and its DaemonSet's pods land on the
    pool's GPU nodes and on no other node."""
    chart = str(DEVICE_PLUGIN_CHART)
    nodes = [node_of(r["Properties"]) for r in resources(template, "AWS::EKS::Nodegroup").values()]
    for props in charts(template):
        if props["Chart"] != "nvidia-device-plugin":
            continue
        values = helm_values({"Properties": props})
        docs = helm_template(helm, props["Release"], chart, values, tmp_path)
        pool = values["nodeSelector"]["gpu-pool.io/pool"]
        config_maps = [
            {name: yaml.safe_load(text) for name, text in d["data"].items()}
            for d in docs
            if d["kind"] == "ConfigMap"
        ]
        ours = values.get("config", {}).get("map")
        assert config_maps == ([{n: yaml.safe_load(t) for n, t in ours.items()}] if ours else [])
        daemon_sets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DaemonSet"}
        # The chart also renders an MPS control daemon: it selects nodes labelled
        # nvidia.com/mps.capable, which none of ours is.
        mps = daemon_sets.pop(f"{props['Release']}-mps-control-daemon")
        for labels, taints in nodes:
            assert not pod_fits_node(mps["spec"]["template"]["spec"], labels, taints)
        ((_, plugin),) = daemon_sets.items()
        pod_spec = plugin["spec"]["template"]["spec"]
        env = {
            e["name"]: e.get("value")
            for c in pod_spec.get("initContainers", []) + pod_spec["containers"]
            for e in c.get("env", [])
        }
        assert env.get("DEFAULT_CONFIG") == values.get("config", {}).get("default")
        for labels, taints in nodes:
            assert pod_fits_node(pod_spec, labels, taints) is (
                labels.get("gpu-pool.io/pool") == pool
            )


def test_a_changed_config_rolls_the_pools_plugin_pods_by_itself(helm, tmp_path):
    """Day 2 on the chart path: the chart puts a checksum of its ConfigMap in the plugin's pod
    template (templates/_helpers.tpl podAnnotations, `checksum/config`), so a changed sharing
    config changes the DaemonSet's pod template and Kubernetes rolls its pods; the same config
    renders the same checksum, so a deploy that changes nothing restarts nothing."""
    chart = str(DEVICE_PLUGIN_CHART)

    def checksum(replicas):
        pool = plan_pool(
            PoolSettings(name="slices", sharing={"mode": "time-slicing", "replicas": replicas})
        )
        assert pool.chart is not None
        docs = helm_template(helm, pool.chart.release, chart, pool.chart.values, tmp_path)
        (plugin,) = [
            d
            for d in docs
            if d["kind"] == "DaemonSet"
            and not d["metadata"]["name"].endswith("-mps-control-daemon")
        ]
        return plugin["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum(4) == checksum(4) != checksum(6)
