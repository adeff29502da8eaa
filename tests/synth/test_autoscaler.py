"""Cluster Autoscaler: chart, image, discovery, IAM, identity, and the zero-node template."""

import pytest

from gpu_pool.cdk.autoscaling.autoscaler import autoscaler_values
from gpu_pool.cli.smoke_test import smoke_test_pod
from gpu_pool.model.versions import KUBERNETES_RELEASES
from gpu_pool.plan.pool import plan_pool
from gpu_pool.plan.record import pool_record
from gpu_pool.settings import AutoscalerSettings, PoolSettings
from tests.support.ca_template import node_template, pod_fits_template
from tests.support.cfn import helm_values, only, render, resources, synth, tags_by_nodegroup

HELM = "Custom::AWSCDK-EKS-HelmChart"


def ca_chart(template):
    return only(
        {
            k: r
            for k, r in resources(template, HELM).items()
            if r["Properties"]["Chart"] == "cluster-autoscaler"
        }
    )[1]


def test_chart_is_pinned_in_kube_system(default_template):
    props = ca_chart(default_template)["Properties"]
    assert (props["Repository"], props["Version"], props["Namespace"], props["Release"]) == (
        "https://kubernetes.github.io/autoscaler",
        "9.59.0",
        "kube-system",
        "cluster-autoscaler",
    )


def test_values_discover_this_cluster_and_balance_zones(default_template):
    values = helm_values(ca_chart(default_template))
    assert values["cloudProvider"] == "aws"
    assert values["awsRegion"] == "<Ref:AWS::Region>"
    assert values["autoDiscovery"] == {
        "clusterName": "<Ref:ClusterEB0386A7>",
        "tags": [
            "k8s.io/cluster-autoscaler/enabled",
            "k8s.io/cluster-autoscaler/<Ref:ClusterEB0386A7>",
        ],
    }
    assert values["image"] == {"tag": "v1.36.1"}
    assert values["extraArgs"] == {
        "balance-similar-node-groups": True,
        "balancing-ignore-label_1": "nodegroup-name",
        "balancing-ignore-label_2": "topology.ebs.csi.aws.com/zone",
        "expander": "priority,least-waste",
        "scale-down-unneeded-time": "5m",
        "scale-down-delay-after-add": "5m",
    }
    # Runs on the system nodes, never on the (tainted, expensive) GPU pool.
    assert values["nodeSelector"] == {"gpu-pool.io/role": "system"}
    assert "tolerations" not in values


@pytest.mark.parametrize(
    "minor", [m for m, r in KUBERNETES_RELEASES.items() if r.cluster_autoscaler_image_tag]
)
def test_image_minor_equals_cluster_minor(minor):
    tag = KUBERNETES_RELEASES[minor].cluster_autoscaler_image_tag
    values = autoscaler_values("c", "us-east-1", tag, AutoscalerSettings(), {}, "")
    assert values["image"]["tag"].removeprefix("v").rsplit(".", 1)[0] == minor


def test_iam_follows_least_privilege(default_template):
    policy = only(
        {
            k: v
            for k, v in resources(default_template, "AWS::IAM::Policy").items()
            if k.startswith("ClusterAutoscalerRole")
        }
    )[1]
    read_only, scaling = render(policy["Properties"]["PolicyDocument"]["Statement"])
    assert read_only["Resource"] == "*" and "Condition" not in read_only
    assert all(":Describe" in a or ":Get" in a for a in read_only["Action"])
    assert scaling == {
        "Action": [
            "autoscaling:SetDesiredCapacity",
            "autoscaling:TerminateInstanceInAutoScalingGroup",
        ],
        "Condition": {
            "StringEquals": {"aws:ResourceTag/eks:cluster-name": "<Ref:ClusterEB0386A7>"}
        },
        "Effect": "Allow",
        "Resource": "*",
    }


def test_pod_identity_ties_the_charts_service_account_to_the_role(default_template):
    association = only(resources(default_template, "AWS::EKS::PodIdentityAssociation"))[1][
        "Properties"
    ]
    values = helm_values(ca_chart(default_template))
    assert association["Namespace"] == "kube-system"
    assert (
        association["ServiceAccount"]
        == values["rbac"]["serviceAccount"]["name"]
        == "cluster-autoscaler"
    )
    assert values["rbac"]["serviceAccount"]["create"] is True
    role_id = association["RoleArn"]["Fn::GetAtt"][0]
    trust = default_template.to_json()["Resources"][role_id]["Properties"][
        "AssumeRolePolicyDocument"
    ]
    assert trust["Statement"] == [
        {
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
        }
    ]
    default_template.has_resource_properties(
        "AWS::EKS::Addon", {"AddonName": "eks-pod-identity-agent"}
    )
    chart_id, _ = only(
        {
            k: r
            for k, r in resources(default_template, HELM).items()
            if r["Properties"]["Chart"] == "cluster-autoscaler"
        }
    )
    depends = default_template.to_json()["Resources"][chart_id]["DependsOn"]
    # The exact ids, from the template: the association the pod's credentials come from, and
    # the agent add-on that serves them (a shared prefix would let either go missing).
    (association_id,) = resources(default_template, "AWS::EKS::PodIdentityAssociation")
    (agent_id,) = [
        logical_id
        for logical_id, addon in resources(default_template, "AWS::EKS::Addon").items()
        if addon["Properties"]["AddonName"] == "eks-pod-identity-agent"
    ]
    assert association_id in depends
    assert agent_id in depends
    assert association_id != agent_id


def test_disabled_autoscaler_installs_nothing():
    template = synth({"autoscaler": {"enabled": False}})
    assert [
        r
        for r in resources(template, HELM).values()
        if r["Properties"]["Chart"] == "cluster-autoscaler"
    ] == []
    template.resource_count_is("AWS::EKS::PodIdentityAssociation", 0)


def test_existing_cluster_autoscaler_uses_its_name_and_no_agent_addon(existing_template):
    values = helm_values(ca_chart(existing_template))
    assert values["autoDiscovery"]["clusterName"] == "platform-prod"
    assert values["nodeSelector"] == {}
    existing_template.resource_count_is("AWS::EKS::Addon", 0)


def test_zero_node_template_fits_the_smoke_test_pod_and_not_a_bigger_one(multi_template):
    pool = pool_record(plan_pool(PoolSettings()), "gpu-pool", None)  # MULTI: default name, taint
    for (types, _), tags in tags_by_nodegroup(multi_template).items():
        template = node_template(tags)
        gpus = int(template["allocatable"]["nvidia.com/gpu"])
        assert template["taints"] == [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
        ]
        assert pod_fits_template(smoke_test_pod(pool), template), types
        assert not pod_fits_template(smoke_test_pod(pool, gpus=gpus + 1), template), types


def test_a_pod_without_the_toleration_does_not_fit(default_template):
    ((_, tags),) = tags_by_nodegroup(default_template).items()
    pod = smoke_test_pod(pool_record(plan_pool(PoolSettings()), "gpu-pool", None))
    pod["spec"]["tolerations"] = []
    assert not pod_fits_template(pod, node_template(tags))


@pytest.mark.parametrize(
    ("types", "warned"), [(["g5.xlarge", "g6.xlarge"], True), (["g5.xlarge"], False)]
)
def test_least_waste_is_warned_about_where_it_would_pick_between_gpu_groups(types, warned):
    from aws_cdk.assertions import Annotations, Match

    from tests.support.cfn import synth_stack

    stack = synth_stack(
        {"autoscaler": {"expander": "least-waste"}, "pool": {"instance_types": types}}
    )
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("least-waste"))
    assert [w.entry.data for w in found] == (
        [
            "autoscaler.expander: 'least-waste' scores CPU and memory only: among GPU node groups "
            "that fit a pod it picks at random (a p5.48xlarge as likely as a g5.xlarge); use "
            "'priority', which prefers fewer GPUs per node, then cheaper families "
            "[ack: gpu-pool:GP-CTRL-11]"
        ]
        if warned
        else []
    )


def test_the_priority_configmap_is_in_cas_own_namespace(multi_template):
    """#38 item 9: CA reads cluster-autoscaler-priority-expander only through an informer on its
    own namespace (expander/priority/priority.go, NewFilter; expander_factory.go), so the
    ConfigMap goes where the chart installs CA (its pin's namespace, versions.py)."""
    import json

    from gpu_pool.model.versions import CLUSTER_AUTOSCALER

    template = multi_template
    (release,) = [
        r["Properties"]
        for r in resources(template, HELM).values()
        if r["Properties"]["Chart"] == "cluster-autoscaler"
    ]
    found = [
        manifest["metadata"]["namespace"]
        for resource in resources(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
        for manifest in json.loads(render(resource["Properties"]["Manifest"]))
        if manifest["metadata"]["name"] == "cluster-autoscaler-priority-expander"
    ]
    assert found == [release["Namespace"]] == [CLUSTER_AUTOSCALER.namespace]
