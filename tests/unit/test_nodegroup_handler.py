"""The per-node-group Lambda handler, run as deployed against a local AWS API (moto's server).

Each test drives the handler through the CloudFormation events the Provider framework passes
on, and reads the ASG's tags or the node group's scaling back after each step.
"""

from __future__ import annotations

import itertools

import boto3
import pytest

from gpu_pool.cdk.nodegroups.handler import index

CLUSTER = "gpu"
PREFIX = "k8s.io/cluster-autoscaler/node-template/"
GPUS = f"{PREFIX}resources/nvidia.com/gpu"
_names = itertools.count()


def _nodegroup_with_asg(eks, autoscaling) -> tuple[str, str]:
    """A node group and the ASG EKS made for it, tagged as EKS tags it."""
    name = f"gpu-{next(_names)}"
    described = eks.create_nodegroup(
        clusterName=CLUSTER,
        nodegroupName=name,
        nodeRole="arn:aws:iam::123456789012:role/node",
        subnets=["subnet-1"],
    )
    asg = described["nodegroup"]["resources"]["autoScalingGroups"][0]["name"]
    autoscaling.create_launch_configuration(
        LaunchConfigurationName=asg, ImageId="ami-12c6146b", InstanceType="g5.xlarge"
    )
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=asg,
        LaunchConfigurationName=asg,
        MinSize=0,
        MaxSize=8,
        AvailabilityZones=["us-east-1a"],
        Tags=[
            {"Key": k, "Value": v, "PropagateAtLaunch": True, "ResourceId": asg}
            for k, v in {
                "eks:cluster-name": CLUSTER,
                "eks:nodegroup-name": name,
                "k8s.io/cluster-autoscaler/enabled": "true",
                f"k8s.io/cluster-autoscaler/{CLUSTER}": "owned",
                "team": "ml-platform",  # a user's own tag
            }.items()
        ],
    )
    return name, asg


@pytest.fixture
def cloud(aws_api):
    eks = boto3.client("eks")
    autoscaling = boto3.client("autoscaling")
    if CLUSTER not in eks.list_clusters()["clusters"]:
        eks.create_cluster(
            name=CLUSTER,
            roleArn="arn:aws:iam::123456789012:role/cluster",
            resourcesVpcConfig={"subnetIds": ["subnet-1"]},
        )
    return eks, autoscaling


def asg_tags(autoscaling, asg) -> dict[str, str]:
    (group,) = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg])[
        "AutoScalingGroups"
    ]
    return {t["Key"]: t["Value"] for t in group["Tags"]}


def props(nodegroup: str, tags: dict[str, str]) -> dict:
    return {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
        "ClusterName": CLUSTER,
        "NodegroupName": nodegroup,
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }


def pool_tags(**labels: str) -> dict[str, str]:
    return {
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{CLUSTER}": "owned",
        GPUS: "1",
        f"{PREFIX}taint/nvidia.com/gpu": "true:NoSchedule",
        **{f"{PREFIX}label/{k}": v for k, v in labels.items()},
    }


TAGS = "Custom::GpuPoolAsgTags"
SCALING = "Custom::GpuPoolNodegroupScaling"


def create(nodegroup, tags):
    return index.on_event(
        {
            "RequestType": "Create",
            "ResourceType": TAGS,
            "ResourceProperties": props(nodegroup, tags),
        }
    )


def update(physical_id, old, new):
    return index.on_event(
        {
            "RequestType": "Update",
            "ResourceType": TAGS,
            "PhysicalResourceId": physical_id,
            "ResourceProperties": new,
            "OldResourceProperties": old,
        }
    )


def delete(physical_id, properties):
    return index.on_event(
        {
            "RequestType": "Delete",
            "ResourceType": TAGS,
            "PhysicalResourceId": physical_id,
            "ResourceProperties": properties,
        }
    )


def test_create_writes_every_tag_and_returns_the_asg_name(cloud):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    tags = pool_tags(workload="inference")
    assert create(nodegroup, tags) == {"PhysicalResourceId": asg, "Data": {"AsgName": asg}}
    assert asg_tags(autoscaling, asg) == {
        **tags,
        "eks:cluster-name": CLUSTER,
        "eks:nodegroup-name": nodegroup,
        "team": "ml-platform",
    }


def test_update_adds_a_label_removes_a_dropped_one_and_changes_the_gpu_count(cloud):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    v1 = pool_tags(workload="inference", tier="a")
    create(nodegroup, v1)

    v2 = pool_tags(workload="inference", tier="a", team="vision")  # label added
    assert update(asg, props(nodegroup, v1), props(nodegroup, v2))["PhysicalResourceId"] == asg
    assert asg_tags(autoscaling, asg)[f"{PREFIX}label/team"] == "vision"

    v3 = pool_tags(workload="inference", team="vision")  # label removed
    update(asg, props(nodegroup, v2), props(nodegroup, v3))
    assert f"{PREFIX}label/tier" not in asg_tags(autoscaling, asg)

    v4 = {**v3, GPUS: "4"}  # GPU count changed
    update(asg, props(nodegroup, v3), props(nodegroup, v4))
    after = asg_tags(autoscaling, asg)
    assert after == {
        **v4,
        "eks:cluster-name": CLUSTER,
        "eks:nodegroup-name": nodegroup,
        "team": "ml-platform",
    }


def test_update_never_deletes_keys_outside_the_node_template(cloud):
    """Discovery tags are EKS's own as well: dropping them from the settings leaves them."""
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    v1 = pool_tags()
    create(nodegroup, v1)
    v2 = {k: v for k, v in v1.items() if k.startswith(PREFIX)}
    update(asg, props(nodegroup, v1), props(nodegroup, v2))
    assert asg_tags(autoscaling, asg)["k8s.io/cluster-autoscaler/enabled"] == "true"
    assert asg_tags(autoscaling, asg)[f"k8s.io/cluster-autoscaler/{CLUSTER}"] == "owned"


def test_replaced_node_group_tags_the_new_asg_and_the_old_one_is_cleaned_up(cloud):
    eks, autoscaling = cloud
    old_group, old_asg = _nodegroup_with_asg(eks, autoscaling)
    v1 = pool_tags(workload="inference")
    create(old_group, v1)
    new_group, new_asg = _nodegroup_with_asg(eks, autoscaling)
    v2 = pool_tags(workload="training")

    result = update(old_asg, props(old_group, v1), props(new_group, v2))
    # A new physical id: CloudFormation deletes the old one after the update.
    assert result == {"PhysicalResourceId": new_asg, "Data": {"AsgName": new_asg}}
    assert asg_tags(autoscaling, new_asg)[f"{PREFIX}label/workload"] == "training"
    assert asg_tags(autoscaling, old_asg)[f"{PREFIX}label/workload"] == "inference"

    delete(old_asg, props(old_group, v1))
    assert not [k for k in asg_tags(autoscaling, old_asg) if k.startswith(PREFIX)]
    assert asg_tags(autoscaling, new_asg)[f"{PREFIX}label/workload"] == "training"


def test_delete_removes_only_node_template_keys(cloud):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    tags = pool_tags(workload="inference")
    create(nodegroup, tags)
    assert delete(asg, props(nodegroup, tags)) == {"PhysicalResourceId": asg}
    assert asg_tags(autoscaling, asg) == {
        "eks:cluster-name": CLUSTER,
        "eks:nodegroup-name": nodegroup,
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{CLUSTER}": "owned",
        "team": "ml-platform",
    }


def test_delete_when_the_asg_is_already_gone_succeeds(cloud):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    tags = pool_tags()
    create(nodegroup, tags)
    autoscaling.delete_auto_scaling_group(AutoScalingGroupName=asg, ForceDelete=True)
    assert delete(asg, props(nodegroup, tags)) == {"PhysicalResourceId": asg}


def test_more_tags_than_one_call_takes_are_all_written_and_removed(cloud):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    many = pool_tags(**{f"team.example.com/label-{i}": "x" for i in range(30)})
    create(nodegroup, many)
    assert len([k for k in asg_tags(autoscaling, asg) if k.startswith(PREFIX)]) == 32
    few = pool_tags()
    update(asg, props(nodegroup, many), props(nodegroup, few))
    assert {k for k in asg_tags(autoscaling, asg) if k.startswith(PREFIX)} == {
        k for k in few if k.startswith(PREFIX)
    }


def scaling_event(request, nodegroup, min_size, max_size, desired_on_create=0):
    return {
        "RequestType": request,
        "ResourceType": SCALING,
        "PhysicalResourceId": f"{CLUSTER}/{nodegroup}/scaling",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
            "ClusterName": CLUSTER,
            "NodegroupName": nodegroup,
            # CloudFormation passes every property value as a string.
            "MinSize": str(min_size),
            "MaxSize": str(max_size),
            "DesiredSizeOnCreate": str(desired_on_create),
        },
    }


def live_scaling(eks, nodegroup):
    described = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=nodegroup)
    return described["nodegroup"]["scalingConfig"]


def scaled_by_the_autoscaler(eks, nodegroup, nodes):
    eks.update_nodegroup_config(
        clusterName=CLUSTER, nodegroupName=nodegroup, scalingConfig={"desiredSize": nodes}
    )


def test_create_applies_min_max_and_the_starting_size(cloud):
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    result = index.on_event(scaling_event("Create", nodegroup, 0, 4, desired_on_create=1))
    assert result == {"PhysicalResourceId": f"{CLUSTER}/{nodegroup}/scaling"}
    assert live_scaling(eks, nodegroup) == {"minSize": 0, "maxSize": 4, "desiredSize": 1}


def test_raising_max_leaves_the_autoscalers_nodes_alone(cloud):
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    index.on_event(scaling_event("Create", nodegroup, 0, 4))
    scaled_by_the_autoscaler(eks, nodegroup, 3)
    index.on_event(scaling_event("Update", nodegroup, 0, 16))
    assert live_scaling(eks, nodegroup) == {"minSize": 0, "maxSize": 16, "desiredSize": 3}
    index.on_event(scaling_event("Update", nodegroup, 1, 16))  # min raised below the live size
    assert live_scaling(eks, nodegroup) == {"minSize": 1, "maxSize": 16, "desiredSize": 3}


def test_bounds_that_exclude_the_live_size_clamp_it(cloud):
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    index.on_event(scaling_event("Create", nodegroup, 0, 8))
    scaled_by_the_autoscaler(eks, nodegroup, 3)
    index.on_event(scaling_event("Update", nodegroup, 0, 2))
    assert live_scaling(eks, nodegroup) == {"minSize": 0, "maxSize": 2, "desiredSize": 2}
    index.on_event(scaling_event("Update", nodegroup, 4, 6))
    assert live_scaling(eks, nodegroup) == {"minSize": 4, "maxSize": 6, "desiredSize": 4}


def test_delete_leaves_the_node_group_as_it_is(cloud):
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    index.on_event(scaling_event("Create", nodegroup, 0, 4))
    scaled_by_the_autoscaler(eks, nodegroup, 2)
    index.on_event(scaling_event("Delete", nodegroup, 0, 4))
    assert live_scaling(eks, nodegroup) == {"minSize": 0, "maxSize": 4, "desiredSize": 2}
