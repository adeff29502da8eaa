"""The NVIDIA DRA driver (`gpu_software: dra-driver`, issue #30) as synthesized and as its real
chart (tests/fixtures/charts/dra-driver-nvidia-gpu-0.4.1, rendered by the kubectl layer's
helm) deploys it: one release whose kubelet plugin reaches exactly the DRA pool's nodes, no
device plugin there, the other pool's device plugin as before, and Cluster Autoscaler's DRA
flag."""

from pathlib import Path

import pytest
import yaml

from gpu_pool.cli.inspect.dra import COMPONENT_LABEL, DRIVER_SELECTOR, KUBELET_PLUGIN
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.model.versions import NVIDIA_DRA_DRIVER
from gpu_pool.plan.dra import dra_driver_chart
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings, deep_merge
from tests.support.cfn import (
    helm_values,
    only,
    pool_nodes,
    releases,
    resources,
    synth,
    tags_by_nodegroup,
    unvalidated_app,
)
from tests.support.chart_defaults import DEVICE_PLUGIN_CHART_DEFAULTS
from tests.support.dra import NAMESPACE, POOL_LABEL, expected_driver_values
from tests.support.helm import manifests, render_vendored

CHART = "dra-driver-nvidia-gpu-0.4.1"
FIXTURES_CHART = Path(__file__).parent.parent / "fixtures" / "charts" / CHART
DRA_CHART_NAME = "dra-driver-nvidia-gpu"
RELEASE = "nvidia-dra-driver-gpu"
# Cluster Autoscaler cannot start a DRA node group from zero (GP-DRA-10).
KEEPS_A_NODE = {"min_size": 1, "desired_size": 1}

EXPECTED_VALUES = expected_driver_values(
    ["dra"],
    [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
    ],
    compute_domains=False,
)



def test_one_pinned_driver_release_with_exact_values(dra_template):
    _, chart = only(releases(dra_template, DRA_CHART_NAME))
    props = chart["Properties"]
    assert (props["Repository"], props["Version"], props["Namespace"], props["Release"]) == (
        "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
        "0.4.1",
        NAMESPACE,
        RELEASE,
    )
    assert helm_values(chart) == EXPECTED_VALUES


def test_only_the_device_plugin_pool_has_a_device_plugin_release(dra_template):
    _, chart = only(releases(dra_template, "nvidia-device-plugin"))
    assert chart["Properties"]["Release"] == "nvidia-device-plugin-plugin"
    # As any device-plugin pool's: its own nodes, its taint.
    assert helm_values(chart) == {
        "nodeSelector": {POOL_LABEL: "plugin"},
        "tolerations": [
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ],
    }
    assert releases(dra_template, "gpu-operator") == {}


def test_cluster_autoscaler_runs_with_its_dra_flag_only_for_a_dra_pool(
    dra_template, default_template
):
    (_, with_dra), (_, without) = (
        only(releases(t, "cluster-autoscaler")) for t in (dra_template, default_template)
    )
    assert helm_values(with_dra)["extraArgs"]["enable-dynamic-resource-allocation"] is True
    assert "enable-dynamic-resource-allocation" not in helm_values(without)["extraArgs"]


def test_the_real_chart_validates_our_values_and_needs_its_override(dra_template, helm, tmp_path):
    values = helm_values(only(releases(dra_template, DRA_CHART_NAME))[1])
    rendered = render_vendored(helm, CHART, RELEASE, NAMESPACE, values, tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    # The chart's validation.yaml refuses GPUs without the override: why the value is there.
    refused = render_vendored(
        helm,
        CHART,
        RELEASE,
        NAMESPACE,
        {**values, "gpuResourcesEnabledOverride": False},
        tmp_path,
    )
    assert refused.returncode != 0
    assert "gpuResourcesEnabledOverride=true" in refused.stderr


def test_the_rendered_kubelet_plugin_reaches_exactly_the_dra_pools_nodes(
    dra_template, helm, tmp_path
):
    values = helm_values(only(releases(dra_template, DRA_CHART_NAME))[1])
    docs = manifests(render_vendored(helm, CHART, RELEASE, NAMESPACE, values, tmp_path))
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    # The 25.12.0 release's names (nameOverride): an upgrade updates this DaemonSet in place,
    # and `gpu-pool verify` finds it and its pods by the labels it reads.
    assert daemonset["metadata"]["name"] == "nvidia-dra-driver-gpu-kubelet-plugin"
    assert DRIVER_SELECTOR == "app.kubernetes.io/name=nvidia-dra-driver-gpu"
    assert daemonset["metadata"]["labels"]["app.kubernetes.io/name"] == "nvidia-dra-driver-gpu"
    assert daemonset["spec"]["selector"]["matchLabels"] == {COMPONENT_LABEL: KUBELET_PLUGIN}
    pod = daemonset["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["gpus"]
    # The pool's taints, in place of the chart's default (nvidia.com/gpu alone).
    assert pod["tolerations"] == EXPECTED_VALUES["kubeletPlugin"]["tolerations"]
    # Without ComputeDomains there is no controller; the GPU DeviceClasses are there.
    assert [d for d in docs if d["kind"] == "Deployment"] == []
    assert sorted(d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass") == [
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
    ]
    admitted = {pool: pod_fits_node(pod, *node) for pool, *node in pool_nodes(dra_template)}
    assert admitted == {"dra": True, "plugin": False, None: False}


def test_dra_nodes_carry_no_cluster_autoscaler_gpu_label_and_device_plugin_nodes_do(dra_template):
    """CA on AWS counts a node with k8s.amazonaws.com/accelerator and no nvidia.com/gpu
    allocatable as unready (cluster-autoscaler-1.36.1 processors/customresources/
    gpu_processor.go:53-56; only GCE marks GPUs as exposed through DRA): a DRA node must not
    carry it, neither on the node group nor in the node-template tags CA reads at zero."""
    accelerator = "k8s.amazonaws.com/accelerator"
    tag = f"k8s.io/cluster-autoscaler/node-template/label/{accelerator}"
    labels = {pool: labels for pool, labels, _ in pool_nodes(dra_template) if pool}
    assert accelerator not in labels["dra"]
    assert labels["plugin"][accelerator] == "nvidia-l4"
    tags = {types: t for (types, _), t in tags_by_nodegroup(dra_template).items()}
    assert tag not in tags[("g6e.xlarge",)]
    assert (
        tags[("g6e.xlarge",)][f"k8s.io/cluster-autoscaler/node-template/label/{POOL_LABEL}"]
        == "dra"
    )
    assert tags[("g6.xlarge",)][tag] == "nvidia-l4"


def test_the_device_plugin_stays_off_the_dra_nodes(dra_template):
    values = helm_values(only(releases(dra_template, "nvidia-device-plugin"))[1])
    pod = deep_merge(DEVICE_PLUGIN_CHART_DEFAULTS, values)
    admitted = {pool: pod_fits_node(pod, *node) for pool, *node in pool_nodes(dra_template)}
    assert admitted == {"dra": False, "plugin": True, None: False}


def test_compute_domains_render_the_controller_off_the_gpu_pools(helm, tmp_path):
    """With an UltraServer DRA pool (p6e-gb200) the chart runs the ComputeDomain controller and
    plugin."""
    plan = plan_pool(
        PoolSettings(
            name="ultra", gpu_software="dra-driver", instance_types=["p6e-gb200.36xlarge"]
        ),
        "pools.ultra",
    )
    chart = dra_driver_chart([plan])
    assert chart.values["resources"]["computeDomains"] == {"enabled": True}
    docs = manifests(render_vendored(helm, CHART, RELEASE, NAMESPACE, chart.values, tmp_path))
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    containers = daemonset["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["compute-domains", "gpus"]
    (controller,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = controller["spec"]["template"]["spec"]
    # Our empty list replaces the chart's tolerations (CriticalAddonsOnly, control-plane).
    assert "tolerations" not in pod
    # Helm merges maps: the chart's preferred terms stay beside ours, and match nothing on EKS:
    # no control-plane node, and no pod with the anti-affinity's label (nameOverride's).
    assert pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [
        {
            "weight": 100,
            "preference": {
                "matchExpressions": [
                    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}
                ]
            },
        }
    ]
    (anti,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti["podAffinityTerm"]["labelSelector"]["matchLabels"] == {
        "dra-driver-nvidia-gpu-component": "controller"
    }
    assert controller["spec"]["template"]["metadata"]["labels"] == {
        "app.kubernetes.io/name": "nvidia-dra-driver-gpu",
        "app.kubernetes.io/instance": "nvidia-dra-driver-gpu",
        "nvidia-dra-driver-gpu-component": "controller",
    }
    # Not the chart's control-plane affinity (no such node on EKS): any node but a GPU pool's.
    (group,) = plan.node_groups
    assert pod_fits_node(pod, {"gpu-pool.io/role": "system"}, [])
    assert not pod_fits_node(pod, group.labels, [])
    assert sorted(d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass") == [
        "compute-domain-daemon.nvidia.com",
        "compute-domain-default-channel.nvidia.com",
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
    ]


def test_dra_pools_share_one_release_that_serves_each():
    """The first DRA pool makes the release; the second, built after it, is in its values."""
    template = synth(
        {
            "cluster": {"kubernetes_version": "1.35"},
            "pools": {
                "a": {"gpu_software": "dra-driver", **KEEPS_A_NODE, "labels": {"workload": "a"}},
                "b": {
                    "gpu_software": "dra-driver",
                    **KEEPS_A_NODE,
                    "instance_types": ["g6.xlarge"],
                    "labels": {"workload": "b"},
                    "taints": [{"key": "team", "value": "b", "effect": "NoExecute"}],
                },
            },
        }
    )
    _, chart = only(releases(template, DRA_CHART_NAME))
    assert releases(template, "nvidia-device-plugin") == {}
    plugin = helm_values(chart)["kubeletPlugin"]
    pod = {"affinity": plugin["affinity"], "tolerations": plugin["tolerations"]}
    admitted = {pool: pod_fits_node(pod, *node) for pool, *node in pool_nodes(template)}
    assert admitted == {"a": True, "b": True, None: False}


def test_library_pools_added_after_the_release_and_the_autoscaler_are_in_their_values():
    """As a library user adds them: the autoscaler first, then two DRA pools; the release the
    first pool made and the autoscaler's flag read every pool at synth."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from gpu_pool import ClusterAutoscaler, GpuNodePool
    from tests.support.user_app import imported_cluster

    stack = cdk.Stack(
        unvalidated_app(), "Lib", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    cluster, subnet = imported_cluster(stack)
    ClusterAutoscaler(stack, "CA", cluster=cluster, kubernetes_version="1.35")
    for name, instance_type in (("a", "g5.xlarge"), ("b", "g6.xlarge")):
        GpuNodePool(
            stack,
            name.upper(),
            cluster=cluster,
            subnets=[subnet],
            kubernetes_version="1.35",
            settings=PoolSettings(
                name=name,
                gpu_software="dra-driver",
                min_size=1,
                desired_size=1,
                instance_types=[instance_type],
                labels={"workload": name},
            ),
        )
    template = Template.from_stack(stack)
    _, chart = only(releases(template, DRA_CHART_NAME))
    plugin = helm_values(chart)["kubeletPlugin"]
    assert plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ] == [{"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": ["a", "b"]}]}]
    _, autoscaler = only(releases(template, "cluster-autoscaler"))
    assert helm_values(autoscaler)["extraArgs"]["enable-dynamic-resource-allocation"] is True


def test_the_release_renders_the_plans_chart_values(monkeypatch):
    """The construct's values are dra_driver_chart's, the chart the rules read (GP-PAIR-03/04
    judge its kubelet plugin pod), not a second assembly that could drift from it: a change to
    the plan's values reaches the synthesized release."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from gpu_pool import GpuNodePool
    from gpu_pool.plan import dra as dra_plan
    from tests.support.user_app import imported_cluster

    changed = {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}}
    monkeypatch.setattr(dra_plan, "dra_resources", lambda pools: changed)
    stack = cdk.Stack(
        unvalidated_app(), "Lib", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    cluster, subnet = imported_cluster(stack)
    pool = GpuNodePool(
        stack,
        "A",
        cluster=cluster,
        subnets=[subnet],
        kubernetes_version="1.35",
        settings=PoolSettings(name="a", gpu_software="dra-driver", **KEEPS_A_NODE),
    )
    _, chart = only(releases(Template.from_stack(stack), DRA_CHART_NAME))
    assert helm_values(chart) == dra_driver_chart([pool.plan]).values
    assert helm_values(chart)["resources"] == changed


def _paths(values, defaults, prefix=""):
    """Each value's dotted path, down to where the chart's default stops being a mapping or
    the value is a pod's scheduling terms (the chart passes `affinity` whole to the pod)."""
    for key, value in values.items():
        path = f"{prefix}{key}"
        default = defaults.get(key) if isinstance(defaults, dict) else None
        if isinstance(value, dict) and isinstance(default, dict) and key != "affinity":
            yield from _paths(value, default, f"{path}.")
        else:
            yield path, key in (defaults or {})


def test_every_value_we_set_is_one_the_new_chart_declares_and_reads():
    """Against the chart's own values.yaml and templates at 0.4.1: each value gpu-pool sets for
    a pool with GPUs and ComputeDomains is declared there, and a template reads it (a renamed
    or dropped value would be silently ignored by Helm)."""
    chart = FIXTURES_CHART
    defaults = yaml.safe_load((chart / "values.yaml").read_text())
    templates = "".join(p.read_text() for p in (chart / "templates").iterdir())
    plan = plan_pool(
        PoolSettings(
            name="ultra", gpu_software="dra-driver", instance_types=["p6e-gb200.36xlarge"]
        ),
        "pools.ultra",
    )
    found = dict(_paths(dra_driver_chart([plan]).values, defaults))
    assert found == {
        "nameOverride": True,
        "nvidiaDriverRoot": True,
        "resourceApiVersion": True,
        "gpuResourcesEnabledOverride": True,
        "controller.tolerations": True,
        "controller.affinity": True,
        "resources.gpus.enabled": True,
        "resources.computeDomains.enabled": True,
        "kubeletPlugin.affinity": True,
        "kubeletPlugin.tolerations": True,
    }
    assert [p for p in found if f"Values.{p}" not in templates] == []


def test_an_auto_mode_dra_pool_on_1_36_installs_no_driver(auto_mode_dra_template):
    """Auto Mode nodes run the NVIDIA DRA driver in their node runtime from Kubernetes 1.36 (EKS
    UG "Manage hardware devices on Amazon EKS"): no driver release, no device plugin, and the
    pool's NodePool as for any Auto Mode pool."""
    assert releases(auto_mode_dra_template, NVIDIA_DRA_DRIVER.chart) == {}
    assert releases(auto_mode_dra_template, "nvidia-device-plugin") == {}
    node_pools = [
        r
        for r in resources(auto_mode_dra_template, "Custom::AWSCDK-EKS-KubernetesResource").values()
        if '"NodePool"' in str(r["Properties"]["Manifest"])
    ]
    assert len(node_pools) == 1


@pytest.mark.parametrize("position", [0, 1, 2])
def test_cas_dra_flag_follows_a_dra_pool_wherever_it_stands(position):
    """#38 item 9: CA simulates claims only with --enable-dynamic-resource-allocation, so the
    flag is on when any node-group pool uses the DRA driver, first, middle or last among the
    pools (an injected bug read only the first); a Karpenter DRA pool needs no CA flag."""
    from gpu_pool.cdk.autoscaling.autoscaler import dynamic_resource_args
    from gpu_pool.plan.pool import plan_pools
    from gpu_pool.settings import AppSettings

    plain = [
        {"instance_types": ["g6.xlarge"], "labels": {"workload": name}} for name in ("a", "b")
    ]
    dra = {"gpu_software": "dra-driver", "instance_types": ["g6e.xlarge"], "min_size": 1}
    pools = plain[:position] + [dra] + plain[position:]

    def flag(pools):
        app = AppSettings.model_validate(
            {
                "cluster": {"kubernetes_version": "1.35"},
                "pools": {f"p{i}": pool for i, pool in enumerate(pools)},
            }
        )
        return dynamic_resource_args(plan_pools(app))

    assert flag(pools) == {"enable-dynamic-resource-allocation": True}
    assert flag(plain) == {}
    karpenter = {**dra, "provisioner": "karpenter", "min_size": 0}
    assert flag(plain[:position] + [karpenter] + plain[position:]) == {}
