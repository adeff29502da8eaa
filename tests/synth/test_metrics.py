"""GPU metrics (#23 item 5): dcgm-exporter on every GPU node and no CPU node, or the CloudWatch
Observability add-on, with one setting."""

import json
import os

import pytest
import yaml

from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan import metrics
from gpu_pool.settings import deep_merge, load_settings
from tests.support.cfn import helm_values, node_of, only, render, resources, synth, unvalidated_app
from tests.support.chart_defaults import (
    CLOUDWATCH_DCGM_EXPORTER_CHART_DEFAULTS,
    DCGM_EXPORTER_CHART_DEFAULTS,
)
from tests.support.helm import (
    CLOUDWATCH_CHART,
    chart_from_env,
    helm_template,
    leaf_paths,
)

HELM = "Custom::AWSCDK-EKS-HelmChart"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}

# Pools with different taints and GPU software: the exporter must reach each kind of GPU node.
METRICS = {
    "pools": {
        "inference": {"instance_types": ["g6.xlarge"], "labels": {"workload": "inference"}},
        "training": {
            "instance_types": ["p5.48xlarge"],
            "labels": {"workload": "training"},
            "taints": [GPU_TAINT, {"key": "dedicated", "value": "training", "effect": "NoExecute"}],
        },
        "arm": {
            "instance_types": ["g5g.xlarge"],
            "labels": {"workload": "arm"},
            "taints": [{"key": "arch", "value": "arm64", "effect": "NoSchedule"}],
        },
        "operator": {
            "instance_types": ["g6e.xlarge"],
            "labels": {"workload": "operator"},
            "gpu_software": "gpu-operator",
        },
    },
    "metrics": {"gpu": "dcgm-exporter"},
}


def chart(template, name):
    return only(
        {k: r for k, r in resources(template, HELM).items() if r["Properties"]["Chart"] == name}
    )[1]


def test_code_knows_the_charts_recorded_defaults():
    assert metrics.DCGM_EXPORTER_CHART_DEFAULTS == DCGM_EXPORTER_CHART_DEFAULTS


def test_dcgm_exporter_is_the_pinned_chart_without_a_service_monitor():
    props = chart(synth(METRICS), "dcgm-exporter")["Properties"]
    assert (props["Repository"], props["Version"], props["Namespace"], props["Release"]) == (
        "https://nvidia.github.io/dcgm-exporter/helm-charts",
        "4.8.2",
        "kube-system",
        "dcgm-exporter",
    )
    assert helm_values(chart(synth(METRICS), "dcgm-exporter"))["serviceMonitor"] == {
        "enabled": False
    }


def test_every_gpu_node_runs_one_exporter_and_no_cpu_node_runs_it():
    """The rendered DaemonSet's pods (the chart's defaults with our values merged, as Helm
    does) select every GPU node of the pools without the GPU Operator and no CPU node; the
    operator's pool gets the operator's own exporter, which gpu-pool leaves enabled."""
    template = synth(METRICS)
    pod = deep_merge(DCGM_EXPORTER_CHART_DEFAULTS, helm_values(chart(template, "dcgm-exporter")))
    operator_values = helm_values(chart(template, "gpu-operator"))
    assert "dcgmExporter" not in operator_values  # the operator chart's default: enabled
    nodegroups = [r["Properties"] for r in resources(template, "AWS::EKS::Nodegroup").values()]
    gpu = [ng for ng in nodegroups if ng["AmiType"].endswith("NVIDIA")]
    cpu = [ng for ng in nodegroups if not ng["AmiType"].endswith("NVIDIA")]
    assert len(gpu) == 4 and cpu
    for ng in gpu:
        labels, taints = node_of(ng)
        by_operator = labels["gpu-pool.io/pool"] == "operator"
        assert pod_fits_node(pod, labels, taints) is not by_operator, ng["InstanceTypes"]
    for ng in cpu:
        assert not pod_fits_node(pod, *node_of(ng))


def test_the_service_monitor_only_when_asked():
    assert metrics.dcgm_exporter_values(True, [])["serviceMonitor"] == {"enabled": True}


def test_no_metrics_by_default(default_template):
    assert not [
        r
        for r in resources(default_template, HELM).values()
        if r["Properties"]["Chart"] == "dcgm-exporter"
    ]
    # The Pod Identity agent and the node monitoring agent (docs/gpu-health.md) only.
    names = {
        r["Properties"]["AddonName"]
        for r in resources(default_template, "AWS::EKS::Addon").values()
    }
    assert names == {"eks-pod-identity-agent", "eks-node-monitoring-agent"}


# A device plugin pool and a GPU Operator pool, with the CloudWatch add-on.
CLOUDWATCH = {
    "pools": {
        "inference": {"instance_types": ["g6.xlarge"], "labels": {"workload": "inference"}},
        "operator": {
            "instance_types": ["g6e.xlarge"],
            "labels": {"workload": "operator"},
            "gpu_software": "gpu-operator",
        },
    },
    "metrics": {"gpu": "cloudwatch"},
}


@pytest.fixture(scope="module")
def cloudwatch_template():
    return synth(CLOUDWATCH)


def cloudwatch_addon(template):
    (addon,) = [
        r["Properties"]
        for r in resources(template, "AWS::EKS::Addon").values()
        if r["Properties"]["AddonName"] == "amazon-cloudwatch-observability"
    ]
    return addon


def test_the_add_on_is_the_pinned_build_and_sends_gpu_metrics_only(cloudwatch_template):
    """The add-on build whose chart values gpu-pool was checked against, told (in keys its
    configuration documents) not to ship every pod's logs through Fluent Bit nor to instrument
    every service for Application Signals: the user asked for GPU metrics."""
    addon = cloudwatch_addon(cloudwatch_template)
    assert addon["AddonVersion"] == "v6.4.0-eksbuild.1"
    assert json.loads(addon["ConfigurationValues"]) == {
        "containerLogs": {"enabled": False},
        "manager": {"applicationSignals": {"autoMonitor": {"monitorAllServices": False}}},
    }


def test_with_cloudwatch_the_operator_pool_runs_the_add_ons_exporter_only(cloudwatch_template):
    assert helm_values(chart(cloudwatch_template, "gpu-operator"))["dcgmExporter"] == {
        "enabled": False
    }


def test_the_add_ons_exporter_reaches_every_gpu_node_of_pools_it_does_not_warn_about(
    cloudwatch_template,
):
    """Each GPU node group's nodes (as EKS labels them: instance type, Linux) against the
    exporter's scheduling terms as the add-on's chart sets them, taints included."""
    nodegroups = [
        r["Properties"] for r in resources(cloudwatch_template, "AWS::EKS::Nodegroup").values()
    ]
    gpu = [ng for ng in nodegroups if ng["AmiType"].endswith("NVIDIA")]
    assert len(gpu) == 2
    for ng in gpu:
        labels, taints = node_of(ng)
        (instance_type,) = ng["InstanceTypes"]
        node = {**labels, "node.kubernetes.io/instance-type": instance_type}
        node["kubernetes.io/os"] = "linux"
        assert pod_fits_node(CLOUDWATCH_DCGM_EXPORTER_CHART_DEFAULTS, node, taints), instance_type


def test_cloudwatch_is_the_observability_add_on_with_its_agent_credentialed():
    template = synth({"metrics": {"gpu": "cloudwatch"}})
    addons = {
        r["Properties"]["AddonName"]: r for r in resources(template, "AWS::EKS::Addon").values()
    }
    assert set(addons) == {
        "amazon-cloudwatch-observability",
        "eks-pod-identity-agent",
        "eks-node-monitoring-agent",
    }
    (association,) = [
        render(r["Properties"])
        for r in resources(template, "AWS::EKS::PodIdentityAssociation").values()
        if r["Properties"]["Namespace"] == "amazon-cloudwatch"
    ]
    assert association["ServiceAccount"] == "cloudwatch-agent"
    role_id = association["RoleArn"].removeprefix("<GetAtt:").split(".")[0]
    role = render(resources(template, "AWS::IAM::Role")[role_id]["Properties"])
    assert [p.rsplit("/", 1)[-1] for p in role["ManagedPolicyArns"]] == [
        "CloudWatchAgentServerPolicy"
    ]
    depends = addons["amazon-cloudwatch-observability"]["DependsOn"]
    assert any(d.startswith("GpuMetricsPodIdentity") for d in depends)
    assert not [
        r for r in resources(template, HELM).values() if r["Properties"]["Chart"] == "dcgm-exporter"
    ]


@pytest.mark.parametrize("value", ["prometheus", "dcgm"])
def test_an_unknown_metrics_choice_is_refused_where_it_enters(value):
    from gpu_pool.settings import ConfigError

    with pytest.raises(ConfigError) as err:
        load_settings({"metrics": {"gpu": value}}, None)
    assert str(err.value) == (
        f"metrics.gpu: must be one of 'none', 'dcgm-exporter' or 'cloudwatch' (got '{value}')"
    )


@chart_from_env("GPU_POOL_DCGM_EXPORTER_CHART", "NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 deployment/")
def test_the_real_chart_renders_a_daemonset_on_every_gpu_node_and_no_cpu_node(helm, tmp_path):
    """Rendered by helm through the chart's own templates: the DaemonSet's pod spec selects
    the GPU nodes outside the GPU Operator and no CPU node, and no ServiceMonitor is made."""
    template = synth(METRICS)
    docs = helm_template(
        helm,
        "dcgm-exporter",
        os.environ["GPU_POOL_DCGM_EXPORTER_CHART"],
        helm_values(chart(template, "dcgm-exporter")),
        tmp_path,
    )
    assert "ServiceMonitor" not in {d["kind"] for d in docs}
    (daemon_set,) = [d for d in docs if d["kind"] == "DaemonSet"]
    pod = daemon_set["spec"]["template"]["spec"]
    for ng in (r["Properties"] for r in resources(template, "AWS::EKS::Nodegroup").values()):
        labels, taints = node_of(ng)
        served_here = ng["AmiType"].endswith("NVIDIA") and labels["gpu-pool.io/pool"] != "operator"
        assert pod_fits_node(pod, labels, taints) is served_here, ng["InstanceTypes"]


@pytest.mark.parametrize("gpu", ["cloudwatch", "dcgm-exporter"])
def test_metrics_pass_cdk_nag(tmp_path, gpu):
    """The add-on's agent role (a managed policy) and the chart add no open finding."""
    import aws_cdk as cdk

    from gpu_pool.cdk.nag.acknowledge import apply_aws_solutions
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import AppSettings

    app = cdk.App(outdir=str(tmp_path))
    GpuPoolStack(app, "Nag", settings=AppSettings.model_validate({"metrics": {"gpu": gpu}}))
    apply_aws_solutions(app)
    app.synth()  # raises on any open finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert all(p["conclusion"] == "success" for p in report["pluginReports"])


def render_cloudwatch_chart(helm, values, workdir):
    """The add-on's chart as helm renders it with `values` and what EKS itself supplies."""
    return helm_template(
        helm,
        "amazon-cloudwatch-observability",
        str(CLOUDWATCH_CHART),
        {"clusterName": "gpu-pool", "region": "us-east-1", **values},
        workdir,
    )


def test_the_real_chart_runs_no_log_shipper_and_monitors_no_service_with_our_values(
    cloudwatch_template, helm, tmp_path
):
    """Rendered by helm through the add-on's chart: its defaults run Fluent Bit and put every
    service in Application Signals' auto-monitoring; with the add-on's configuration values
    gpu-pool sends, neither."""
    values = json.loads(cloudwatch_addon(cloudwatch_template)["ConfigurationValues"])

    def rendered(values):
        docs = render_cloudwatch_chart(helm, values, tmp_path)
        fluent_bit = [d for d in docs if d["metadata"]["name"].startswith("fluent-bit")]
        (operator,) = [d for d in docs if d["kind"] == "Deployment"]
        (args,) = [c["args"] for c in operator["spec"]["template"]["spec"]["containers"]]
        (monitor,) = [a for a in args if a.startswith("--auto-monitor-config=")]
        config = json.loads(monitor.removeprefix("--auto-monitor-config="))
        return bool(fluent_bit), config["monitorAllServices"]

    assert rendered({}) == (True, True)
    assert rendered(values) == (False, False)


def test_the_real_chart_places_its_exporter_as_recorded(cloudwatch_template, helm, tmp_path):
    """Rendered by helm with the values gpu-pool sends: the DcgmExporter the add-on's operator
    turns into a DaemonSet carries the scheduling terms recorded in tests/fixtures, which the
    GP-METRICS-02 rule and the tests above read."""
    values = json.loads(cloudwatch_addon(cloudwatch_template)["ConfigurationValues"])
    docs = render_cloudwatch_chart(helm, values, tmp_path)
    (exporter,) = [d["spec"] for d in docs if d["kind"] == "DcgmExporter"]
    recorded = CLOUDWATCH_DCGM_EXPORTER_CHART_DEFAULTS
    assert {key: exporter[key] for key in recorded} == recorded


def _library_metrics(gpu):
    """A user's stack: an eks.Cluster, GpuMetrics, then a tainted pool added after it."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from gpu_pool import GpuMetrics, GpuNodePool, MetricsSettings, PoolSettings, Taint
    from tests.support.user_app import user_cluster

    stack = cdk.Stack(unvalidated_app(), "User")
    cluster = user_cluster(stack)
    metrics = GpuMetrics(stack, "Metrics", cluster=cluster, settings=MetricsSettings(gpu=gpu))
    GpuNodePool(
        stack,
        "Training",
        cluster=cluster,
        subnets=cluster.vpc.private_subnets,
        settings=PoolSettings(
            name="training", taints=[Taint(key="dedicated", value="training", effect="NoExecute")]
        ),
    )
    return metrics, Template.from_stack(stack)


def test_the_construct_installs_the_exporter_for_pools_added_after_it():
    metrics, template = _library_metrics("dcgm-exporter")
    assert metrics.addon is None
    props = chart(template, "dcgm-exporter")["Properties"]
    assert (props["Version"], props["Namespace"], props["Release"]) == (
        "4.8.2",
        "kube-system",
        "dcgm-exporter",
    )
    assert helm_values(chart(template, "dcgm-exporter")) == {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "nvidia.com/gpu.present",
                                    "operator": "In",
                                    "values": ["true"],
                                },
                                {
                                    "key": "nvidia.com/gpu.deploy.operands",
                                    "operator": "In",
                                    "values": ["false"],
                                },
                            ]
                        }
                    ]
                }
            }
        },
        "tolerations": [
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        ],
        "serviceMonitor": {"enabled": False},
    }


def test_the_construct_installs_the_cloudwatch_add_on_on_a_users_cluster():
    metrics, template = _library_metrics("cloudwatch")
    assert metrics.exporter is None
    addon = cloudwatch_addon(template)
    assert (addon["AddonVersion"], json.loads(addon["ConfigurationValues"])) == (
        "v6.4.0-eksbuild.1",
        {
            "containerLogs": {"enabled": False},
            "manager": {"applicationSignals": {"autoMonitor": {"monitorAllServices": False}}},
        },
    )
    names = sorted(
        r["Properties"]["AddonName"] for r in resources(template, "AWS::EKS::Addon").values()
    )
    assert names == ["amazon-cloudwatch-observability", "eks-pod-identity-agent"]


def test_the_addons_configuration_is_the_pinned_charts_values(cloudwatch_template):
    """#38 item 8: EKS passes an add-on's configurationValues to the chart the add-on version is
    a build of (v6.4.0-eksbuild.1: chart 6.4.0, vendored); its schema is that chart's values. No
    EKS API is reachable here to fetch `describe-addon-configuration`, so every value gpu-pool
    sends must be one the chart declares, with the chart's type, or, where the chart computes
    its default in a template (autoMonitor.monitorAllServices, templates/_helpers.tpl), one its
    templates read by name; the render tests above show each takes effect."""
    values = json.loads(cloudwatch_addon(cloudwatch_template)["ConfigurationValues"])
    declared = yaml.safe_load((CLOUDWATCH_CHART / "values.yaml").read_text())
    templates = "".join(p.read_text() for p in (CLOUDWATCH_CHART / "templates").rglob("*.tpl"))
    for path in leaf_paths(values):
        parent = declared
        for key in path[:-1]:
            assert isinstance(parent, dict) and key in parent, path
            parent = parent[key]
        leaf = values
        for key in path:
            leaf = leaf[key]
        if path[-1] in parent:
            assert type(leaf) is type(parent[path[-1]]), (path, leaf, parent[path[-1]])
        else:
            assert f'"{path[-1]}"' in templates, path
