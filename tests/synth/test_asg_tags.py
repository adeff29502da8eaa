"""The ASG tags Cluster Autoscaler reads at zero nodes, and who may write them."""

import pytest

from gpu_pool.cdk.nodegroups.asg_tags import RESOURCE_TYPE
from tests.support.cfn import render, resources, tags_by_nodegroup


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


def test_tag_resource_names_the_cluster_and_the_bare_nodegroup_name(default_template):
    ((_, resource),) = resources(default_template, RESOURCE_TYPE).items()
    props = render(resource["Properties"])
    assert props["ClusterName"] == "<Ref:ClusterEB0386A7>"
    # GetAtt NodegroupName is the bare name DescribeNodegroup takes; Ref is cluster/nodegroup.
    assert props["NodegroupName"] == "<GetAtt:GpuPoolG5Xlarge2D99A550.NodegroupName>"
    assert props["ServiceToken"] == (
        "<GetAtt:GpuPoolNodegroupHandlerProviderframeworkonEvent015E4CAC.Arn>"
    )


def test_tag_writer_role_is_scoped_to_this_cluster(default_template):
    policies = resources(default_template, "AWS::IAM::Policy")
    ((_, policy),) = {
        k: v for k, v in policies.items() if "NodegroupHandlerRoleGrants" in k
    }.items()
    statements = render(policy["Properties"]["PolicyDocument"]["Statement"])
    assert statements == [
        {
            "Action": ["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"],
            "Effect": "Allow",
            "Resource": "arn:<Ref:AWS::Partition>:eks:<Ref:AWS::Region>:<Ref:AWS::AccountId>"
            ":nodegroup/gpu-pool/*/*",
        },
        {
            "Action": ["autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags"],
            "Condition": {
                "StringEquals": {"aws:ResourceTag/eks:cluster-name": "gpu-pool"}
            },
            "Effect": "Allow",
            "Resource": "arn:<Ref:AWS::Partition>:autoscaling:<Ref:AWS::Region>:"
            "<Ref:AWS::AccountId>:autoScalingGroup:*",
        },
        {"Action": "autoscaling:DescribeAutoScalingGroups", "Effect": "Allow", "Resource": "*"},
    ]
    # The handler runs as that role, whatever else the stack holds.
    handler = resources(default_template, "AWS::Lambda::Function")[
        "GpuPoolNodegroupHandler12C640D7"
    ]
    assert (
        render(handler["Properties"]["Role"]) == "<GetAtt:GpuPoolNodegroupHandlerRoleD2D6255F.Arn>"
    )
    assert handler["Properties"]["Handler"] == "index.on_event"
