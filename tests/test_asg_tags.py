"""The ASG tags Cluster Autoscaler reads at zero nodes, and who may write them."""

import pytest

from tests.cfn import render, resources, sdk_call

CUSTOM = "Custom::AWS"


def calls(template, action):
    found = {}
    for logical_id, resource in resources(template, CUSTOM).items():
        call = sdk_call(resource)
        if call["action"] == action:
            found[logical_id] = (resource, call)
    return found


def tags_by_nodegroup(template):
    """{instance types: {tag key: value}} from each group's CreateOrUpdateTags call."""
    nodegroups = resources(template, "AWS::EKS::Nodegroup")
    lookups = {k: call for k, (_, call) in calls(template, "DescribeNodegroup").items()}
    result = {}
    for _, (_, call) in calls(template, "CreateOrUpdateTags").items():
        asg_ref = call["parameters"]["Tags"][0]["ResourceId"]
        lookup_id = asg_ref.removeprefix("<GetAtt:").split(".")[0]
        nodegroup_ref = lookups[lookup_id]["parameters"]["nodegroupName"]
        nodegroup_id = nodegroup_ref.removeprefix("<GetAtt:").split(".")[0]
        key = (tuple(nodegroups[nodegroup_id]["Properties"]["InstanceTypes"]), nodegroup_id)
        result[key] = {t["Key"]: t["Value"] for t in call["parameters"]["Tags"]}
        for tag in call["parameters"]["Tags"]:
            assert tag["ResourceId"] == asg_ref
            assert tag["ResourceType"] == "auto-scaling-group"
            assert tag["PropagateAtLaunch"] is False
    return result


def test_default_group_tags_in_the_format_cluster_autoscaler_parses(default_template):
    ((_, tags),) = tags_by_nodegroup(default_template).items()
    cluster = "<Ref:ClusterEB0386A7>"
    assert tags == {
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{cluster}": "owned",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "1",
        "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage": "200Gi",
        "k8s.io/cluster-autoscaler/node-template/label/accelerator": "nvidia",
        "k8s.io/cluster-autoscaler/node-template/label/workload": "inference",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-pool.io/pool": "gpu",
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/gpu.deploy.operands": "false",
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/gpu.present": "true",
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator": "nvidia-a10g",
        # Kubernetes spelling, value:Effect; NO_SCHEDULE would be silently ignored.
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "true:NoSchedule",
    }


@pytest.mark.parametrize(
    ("instance_type", "gpus"),
    [
        ("g5.xlarge", "1"),
        ("g6e.12xlarge", "4"),
        ("p5.48xlarge", "8"),
        ("p6-b200.48xlarge", "8"),
        ("g5g.xlarge", "1"),
    ],
)
def test_gpu_resource_tag_matches_the_instance_type(multi_template, instance_type, gpus):
    counts = {
        tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"]
        for (types, _), tags in tags_by_nodegroup(multi_template).items()
        if types == (instance_type,)
    }
    assert counts == {gpus}  # both zones' groups


def test_tags_rewritten_on_update_and_nothing_done_on_delete(default_template):
    for resource in resources(default_template, CUSTOM).values():
        props = resource["Properties"]
        assert props["Update"] == props["Create"]
        assert "Delete" not in props
        assert props["InstallLatestAwsSdk"] is False


def test_describe_uses_the_bare_nodegroup_name_and_returns_only_the_asg_name(default_template):
    ((_, (resource, call)),) = calls(default_template, "DescribeNodegroup").items()
    assert call["service"] == "EKS"
    assert call["parameters"]["clusterName"] == "<Ref:ClusterEB0386A7>"
    # GetAtt NodegroupName is the bare name; Ref would be cluster/nodegroup.
    assert call["parameters"]["nodegroupName"].endswith(".NodegroupName>")
    assert call["outputPaths"] == ["nodegroup.resources.autoScalingGroups.0.name"]
    assert call["physicalResourceId"] == {
        "responsePath": "nodegroup.resources.autoScalingGroups.0.name"
    }


def test_many_labels_are_written_in_calls_of_at_most_25_tags():
    from tests.cfn import synth

    labels = {f"team.example.com/label-{i}": "x" for i in range(30)}
    template = synth({"pool": {"labels": labels}, "autoscaler": {"enabled": False}})
    sizes = sorted(
        len(c["parameters"]["Tags"]) for _, c in calls(template, "CreateOrUpdateTags").values()
    )
    # 30 labels + 4 of gpu-pool's + 2 discovery + 2 resources + 1 taint = 39
    assert sizes == [14, 25]


def test_tag_writer_role_is_scoped_to_this_cluster(default_template):
    policies = resources(default_template, "AWS::IAM::Policy")
    ((_, policy),) = {k: v for k, v in policies.items() if "AsgTagWriter" in k}.items()
    statements = render(policy["Properties"]["PolicyDocument"]["Statement"])
    assert statements == [
        {
            "Action": "eks:DescribeNodegroup",
            "Effect": "Allow",
            "Resource": "arn:<Ref:AWS::Partition>:eks:<Ref:AWS::Region>:<Ref:AWS::AccountId>"
            ":nodegroup/<Ref:ClusterEB0386A7>/*/*",
        },
        {
            "Action": "autoscaling:CreateOrUpdateTags",
            "Condition": {
                "StringEquals": {"aws:ResourceTag/eks:cluster-name": "<Ref:ClusterEB0386A7>"}
            },
            "Effect": "Allow",
            "Resource": "arn:<Ref:AWS::Partition>:autoscaling:<Ref:AWS::Region>:"
            "<Ref:AWS::AccountId>:autoScalingGroup:*",
        },
    ]
    # Every custom resource runs with that role, and there is only the one Lambda.
    role_refs = {
        str(r["Properties"]["Role"])
        for logical_id, r in resources(default_template, "AWS::Lambda::Function").items()
        if logical_id.startswith("AWS679f53fac002430cb0da5b7982bd2287")
    }
    assert len(role_refs) == 1 and "AsgTagWriter" in role_refs.pop()
