"""Several GPU pools in one cluster: each scales and schedules on its own."""

import json
import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from gpu_pool.cdk.nodegroups.pool import GpuNodePool
from gpu_pool.settings import ConfigError, PoolSettings, deep_merge
from tests.support.ca_template import node_template, pod_fits_template
from tests.support.cfn import (
    asg_names_by_types,
    autoscaler_priorities,
    helm_values,
    node_of,
    render,
    resources,
    tags_by_nodegroup,
    unvalidated_app,
)
from tests.support.chart_defaults import DEVICE_PLUGIN_CHART_DEFAULTS
from tests.support.settings import GPU_TAINT

HELM = "Custom::AWSCDK-EKS-HelmChart"
TRAINING_TAINTS = [GPU_TAINT, {"key": "dedicated", "value": "training", "effect": "NoSchedule"}]


def gpu_nodegroups(template):
    return {
        k: r["Properties"]
        for k, r in resources(template, "AWS::EKS::Nodegroup").items()
        if r["Properties"]["AmiType"].endswith("NVIDIA")
    }


def charts(template, chart):
    return {
        r["Properties"]["Release"]: r
        for r in resources(template, HELM).values()
        if r["Properties"]["Chart"] == chart
    }


def test_each_pool_gets_its_node_groups_labels_and_taints(three_pools_template):
    groups = {
        (p["Labels"]["gpu-pool.io/pool"], tuple(p["InstanceTypes"])): p
        for p in gpu_nodegroups(three_pools_template).values()
    }
    assert sorted(groups) == [
        ("inference", ("g5.xlarge",)),
        ("inference", ("g6e.xlarge",)),
        ("spot", ("g6.xlarge",)),
        ("training", ("p5.48xlarge",)),
    ]
    training = groups[("training", ("p5.48xlarge",))]
    assert training["Taints"] == [
        {"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NO_SCHEDULE"},
        {"Key": "dedicated", "Value": "training", "Effect": "NO_SCHEDULE"},
    ]
    assert training["Labels"]["workload"] == "training"
    assert groups[("spot", ("g6.xlarge",))]["CapacityType"] == "SPOT"
    assert groups[("inference", ("g5.xlarge",))]["CapacityType"] == "ON_DEMAND"
    assert {k: v for k, v in groups[("spot", ("g6.xlarge",))]["Labels"].items()} == {
        "accelerator": "nvidia",
        "gpu-pool.io/pool": "spot",
        "nvidia.com/gpu.present": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-l4",
        "nvidia.com/gpu.deploy.operands": "false",
    }


def test_each_pools_asg_tags_carry_its_own_labels_taints_and_gpu_count(three_pools_template):
    by_types = {types: tags for (types, _), tags in tags_by_nodegroup(three_pools_template).items()}
    label = "k8s.io/cluster-autoscaler/node-template/label/"
    taint = "k8s.io/cluster-autoscaler/node-template/taint/"
    gpu = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
    training = by_types[("p5.48xlarge",)]
    assert training[gpu] == "8"
    assert training[f"{label}gpu-pool.io/pool"] == "training"
    assert training[f"{taint}dedicated"] == "training:NoSchedule"
    spot = by_types[("g6.xlarge",)]
    assert (spot[gpu], spot[f"{label}gpu-pool.io/pool"]) == ("1", "spot")
    assert f"{label}workload" not in spot and f"{taint}dedicated" not in spot
    assert by_types[("g5.xlarge",)][f"{label}gpu-pool.io/pool"] == "inference"


def test_one_device_plugin_release_per_pool(three_pools_template):
    releases = charts(three_pools_template, "nvidia-device-plugin")
    assert sorted(releases) == [
        "nvidia-device-plugin-inference",
        "nvidia-device-plugin-spot",
        "nvidia-device-plugin-training",
    ]
    training = helm_values(releases["nvidia-device-plugin-training"])
    assert training["nodeSelector"] == {"gpu-pool.io/pool": "training"}
    assert training["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_every_gpu_node_runs_exactly_one_device_plugin_and_cpu_nodes_none(three_pools_template):
    from gpu_pool.model.scheduling import pod_fits_node

    # Each DaemonSet's pods as the cluster sees them: chart defaults with our values, as Helm
    # merges them.
    plugins = {
        release: deep_merge(DEVICE_PLUGIN_CHART_DEFAULTS, helm_values(chart))
        for release, chart in charts(three_pools_template, "nvidia-device-plugin").items()
    }
    nodegroups = resources(three_pools_template, "AWS::EKS::Nodegroup").values()
    for props in (n["Properties"] for n in nodegroups):
        running = [r for r, pod in plugins.items() if pod_fits_node(pod, *node_of(props))]
        if props["AmiType"].endswith("NVIDIA"):
            assert running == [f"nvidia-device-plugin-{props['Labels']['gpu-pool.io/pool']}"]
        else:
            assert running == [], props["InstanceTypes"]


def test_a_one_gpu_pod_scales_up_the_cheapest_one_gpu_group_not_p5(three_pools_template):
    """CA's own rules: node templates from the ASG tags filter the groups that fit, then the
    priority expander keeps those matching the highest priority (priority.go)."""
    values = helm_values(charts(three_pools_template, "cluster-autoscaler")["cluster-autoscaler"])
    assert values["extraArgs"]["expander"] == "priority,least-waste"
    priorities = autoscaler_priorities(three_pools_template)
    pod = {
        "spec": {
            "tolerations": [{"operator": "Exists"}],  # tolerates every taint
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        }
    }
    asg_of = {}  # ASG name (the tag resource's AsgName) -> instance types
    fitting = []
    asg_names = asg_names_by_types(three_pools_template)
    for (types, _), tags in tags_by_nodegroup(three_pools_template).items():
        asg = asg_names[types]
        asg_of[asg] = types
        if pod_fits_template(pod, node_template(tags)):
            fitting.append(asg)
    assert len(fitting) == 4  # every GPU group fits a 1-GPU pod that tolerates everything

    def priority(asg):
        return max(
            p for p, regexes in priorities.items() if any(re.search(r, asg) for r in regexes)
        )

    ranked = sorted(fitting, key=priority, reverse=True)
    assert [asg_of[a] for a in ranked] == [
        ("g6.xlarge",),  # 1 GPU, L4: the cheapest per GPU-hour
        ("g5.xlarge",),
        ("g6e.xlarge",),
        ("p5.48xlarge",),  # 8 x H100 last
    ]
    assert len({priority(a) for a in ranked}) == 4  # no tie left to chance
    # Groups no GPU priority names (the system nodes) still match the catch-all.
    assert priority("eks-ClusterNodegroupSystemNodes-1234") == 0


def test_outputs_tell_a_workload_how_to_reach_each_pool(three_pools_template):
    outputs = three_pools_template.to_json()["Outputs"]
    assert json.loads(outputs["GpuPoolTrainingNodeSelector"]["Value"]) == {
        "gpu-pool.io/pool": "training"
    }
    assert json.loads(outputs["GpuPoolTrainingTolerations"]["Value"]) == [
        {"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]}
        for t in TRAINING_TAINTS
    ]
    assert render(outputs["GpuPoolInferenceNodeGroups"]["Value"]) == (
        "<GetAtt:GpuPoolInferenceG6eXlarge95CFD400.NodegroupName>,"
        "<GetAtt:GpuPoolInferenceG5Xlarge5EBFEC2D.NodegroupName>"
    )


def test_one_pool_form_keeps_its_logical_ids_and_pools_get_their_own(three_pools_template):
    ids = sorted(k for k in gpu_nodegroups(three_pools_template))
    assert [i[:-8] for i in ids] == [
        "GpuPoolInferenceG5Xlarge",
        "GpuPoolInferenceG6eXlarge",
        "GpuPoolSpotG6Xlarge",
        "GpuPoolTrainingP548xlarge",
    ]


def _library_cluster():
    stack = cdk.Stack(unvalidated_app(), "Lib")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        stack,
        "Kubectl",
        service_token="arn:aws:lambda:us-east-1:123456789012:function:kubectl",
        role=iam.Role.from_role_arn(stack, "KubectlRole", "arn:aws:iam::123456789012:role/k"),
    )
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name="c", kubectl_provider=provider
    )
    return stack, cluster, vpc.private_subnets


def test_two_library_pools_with_one_name_are_refused_in_one_line_naming_the_construct():
    stack, cluster, subnets = _library_cluster()
    GpuNodePool(stack, "A", cluster=cluster, subnets=subnets, settings=PoolSettings())
    with pytest.raises(ConfigError) as err:
        GpuNodePool(
            stack,
            "B",
            cluster=cluster,
            subnets=subnets,
            settings=PoolSettings(instance_types=["g6.xlarge"]),
        )
    assert str(err.value).splitlines() == [
        "GpuNodePool 'Lib/B': pool.name: another pool on this cluster is already named 'gpu'; "
        "the name labels the pool's nodes and names its device plugin release, so it must be "
        "unique per cluster: rename one",
    ]


_DUPLICATE_NAME = (
    "pool.name: another pool on this cluster is already named 'gpu'; the name labels the "
    "pool's nodes and names its device plugin release, so it must be unique per cluster: "
    "rename one"
)


def test_a_pool_copied_with_equal_settings_into_a_second_stack_is_refused():
    # Two constructs with identical settings make equal plans: the registry must tell them
    # apart by identity, or the second pool's device plugin release collides at deploy.
    stack, cluster, subnets = _library_cluster()
    other = cdk.Stack(stack.node.scope, "Copy")
    settings = PoolSettings(labels={"workload": "copied"})
    GpuNodePool(stack, "A", cluster=cluster, subnets=subnets, settings=settings)
    with pytest.raises(ConfigError) as err:
        GpuNodePool(other, "A", cluster=cluster, subnets=subnets, settings=settings)
    assert str(err.value).splitlines() == [f"GpuNodePool 'Copy/A': {_DUPLICATE_NAME}"]


def test_one_plan_object_handed_to_two_constructs_is_two_pools():
    from gpu_pool.plan.pool import plan_pool

    stack, cluster, subnets = _library_cluster()
    plan = plan_pool(PoolSettings())
    GpuNodePool(stack, "A", cluster=cluster, subnets=subnets, settings=plan)
    with pytest.raises(ConfigError) as err:
        GpuNodePool(stack, "B", cluster=cluster, subnets=subnets, settings=plan)
    assert str(err.value).splitlines() == [f"GpuNodePool 'Lib/B': {_DUPLICATE_NAME}"]


def test_library_pools_with_distinct_names_share_one_autoscaler_priority_list():
    from gpu_pool.cdk.autoscaling.autoscaler import ClusterAutoscaler
    from gpu_pool.settings import AutoscalerSettings

    stack, cluster, subnets = _library_cluster()
    # The autoscaler first: it reads the pools at synth, whenever they are added.
    ClusterAutoscaler(
        stack,
        "CA",
        cluster=cluster,
        settings=AutoscalerSettings(image_tag="v1.35.2"),
        install_pod_identity_agent=False,
    )
    for name, types in (("big", ["p5.48xlarge"]), ("small", ["g6.xlarge"])):
        GpuNodePool(
            stack,
            name,
            cluster=cluster,
            subnets=subnets,
            settings=PoolSettings(name=name, instance_types=types),
        )
    template = cdk.assertions.Template.from_stack(stack)
    priorities = autoscaler_priorities(template)
    assert sorted(priorities) == [0, 10, 20]
    assert "smallG6Xlarge" in priorities[20][0] and "bigP548xlarge" in priorities[10][0]
