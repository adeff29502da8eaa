"""The per-node-group Lambda handler, run as deployed against a local AWS API (moto's server)
made strict where moto is more lenient than AWS (tests/support/strict_aws.py).

Each test drives the handler through the CloudFormation events the Provider framework passes
on, with the resource types the constructs emit, and reads the ASG's tags or the node group's
scaling back after each step. Every AWS call a test makes, the handler's included, is checked
against botocore's service model when the test ends.
"""

from __future__ import annotations

import itertools

import boto3
import pytest
from botocore.exceptions import ClientError, ParamValidationError

from gpu_pool.cdk.nodegroups import asg_tags as asg_tags_construct
from gpu_pool.cdk.nodegroups import scaling as scaling_construct
from gpu_pool.cdk.nodegroups.handler import index
from tests.support.strict_aws import TAGS_PER_ASG, StrictAws

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
        # As the template creates every group (scaling.py, TEMPLATE_SCALING). Left out, moto
        # gives every such group one shared dict, which an update to one group changes for all.
        scalingConfig={"minSize": 0, "maxSize": 8, "desiredSize": 0},
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
def strict(aws_api, monkeypatch):
    """AWS's documented rules on every client boto3.client() makes; when the test ends, every
    call made (the handler's included) must match botocore's service model."""
    strict = StrictAws.install(monkeypatch)
    yield strict
    assert not strict.invalid_calls()


@pytest.fixture
def cloud(strict):
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


TAGS = asg_tags_construct.RESOURCE_TYPE
SCALING = scaling_construct.RESOURCE_TYPE


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


def node_template(autoscaling, asg) -> dict[str, str]:
    """The ASG's Cluster Autoscaler node-template tags: what its zero-node template holds."""
    return {k: v for k, v in asg_tags(autoscaling, asg).items() if k.startswith(PREFIX)}


def owned(tags: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in tags.items() if k.startswith(PREFIX)}


def test_a_label_added_removed_and_the_gpu_count_changed(cloud):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    v1 = pool_tags(workload="inference", tier="a")
    create(nodegroup, v1)

    v2 = pool_tags(workload="inference", tier="a", team="vision")  # label added
    assert update(asg, props(nodegroup, v1), props(nodegroup, v2))["PhysicalResourceId"] == asg
    assert node_template(autoscaling, asg) == owned(v2)

    v3 = pool_tags(workload="inference", team="vision")  # label removed
    update(asg, props(nodegroup, v2), props(nodegroup, v3))
    assert node_template(autoscaling, asg) == owned(v3)

    v4 = {**v3, GPUS: "4"}  # GPU count changed
    update(asg, props(nodegroup, v3), props(nodegroup, v4))
    assert asg_tags(autoscaling, asg) == {
        **v4,
        "eks:cluster-name": CLUSTER,
        "eks:nodegroup-name": nodegroup,
        "team": "ml-platform",
    }


def test_a_taint_changed_to_another_key(cloud):
    """The old taint's key must go: a stale taint blocks every scale-up from zero of the group."""
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    v1 = pool_tags()
    create(nodegroup, v1)
    v2 = {k: v for k, v in v1.items() if "/taint/" not in k}
    v2[f"{PREFIX}taint/example.com/dedicated"] = "gpu:NoExecute"
    update(asg, props(nodegroup, v1), props(nodegroup, v2))
    assert node_template(autoscaling, asg) == owned(v2)


def test_update_never_deletes_keys_outside_the_node_template(cloud):
    """Discovery tags are EKS's own as well: dropping them from the settings leaves them."""
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    v1 = pool_tags()
    create(nodegroup, v1)
    v2 = owned(v1)
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
    assert node_template(autoscaling, new_asg) == owned(v2)
    assert node_template(autoscaling, old_asg) == owned(v1)

    delete(old_asg, props(old_group, v1))
    assert node_template(autoscaling, old_asg) == {}
    assert node_template(autoscaling, new_asg) == owned(v2)


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


def thirty_labels(name: str) -> dict[str, str]:
    """Pool tags with 30 labels: 32 node-template keys, more than one tag call takes."""
    return pool_tags(**{f"team.example.com/{name}-{i}": "x" for i in range(30)})


def test_more_tags_than_one_call_takes_are_all_written_and_removed(cloud):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    many = thirty_labels("label")
    create(nodegroup, many)
    assert node_template(autoscaling, asg) == owned(many)
    few = pool_tags()
    update(asg, props(nodegroup, many), props(nodegroup, few))
    assert node_template(autoscaling, asg) == owned(few)
    delete(asg, props(nodegroup, few))
    assert node_template(autoscaling, asg) == {}


def test_every_label_renamed_at_once_stays_within_the_asgs_50_tags(cloud):
    """30 labels out and 30 in: the stale ones are deleted before the new ones are written."""
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    before, after = thirty_labels("old"), thirty_labels("new")
    create(nodegroup, before)
    update(asg, props(nodegroup, before), props(nodegroup, after))
    assert node_template(autoscaling, asg) == owned(after)


# -- the strict fixture's Auto Scaling rules, each against the bug it guards against -----------


def key_on(asg: str, key: str, **value: str) -> dict[str, str]:
    return {"ResourceId": asg, "ResourceType": "auto-scaling-group", "Key": key, **value}


@pytest.mark.parametrize(
    ("value", "deleted"),
    [
        # The handler's call before #20: AWS keeps the tag; moto alone deleted it.
        ({"Value": ""}, False),
        ({"Value": "inference"}, True),
        ({}, True),  # key only: the handler's call now
    ],
    ids=["empty-value", "live-value", "key-only"],
)
def test_delete_tags_keeps_a_tag_whose_value_does_not_match(cloud, value, deleted):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    create(nodegroup, pool_tags(workload="inference"))
    label = f"{PREFIX}label/workload"
    autoscaling.delete_tags(Tags=[key_on(asg, label, **value)])
    assert (label not in asg_tags(autoscaling, asg)) is deleted


def test_a_tag_call_over_25_tags_is_refused(cloud, monkeypatch):
    """The bug: one call for every tag. The handler batches them (TAGS_PER_CALL)."""
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    monkeypatch.setattr(index, "TAGS_PER_CALL", 1000)
    with pytest.raises(ClientError, match="at most 25 per call"):
        create(nodegroup, thirty_labels("label"))


def test_tags_beyond_50_on_an_asg_are_refused(cloud):
    """The bug: the handler before #20 wrote the new tags before deleting the stale ones, so
    renaming many labels at once took the ASG over 50 tags for a moment, and AWS refused."""
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    # 37 tags: 5 EKS's and the user's (the discovery tags among them), 32 node-template keys.
    create(nodegroup, thirty_labels("old"))
    renamed = owned(thirty_labels("new")).items() - owned(thirty_labels("old")).items()
    first_call = [key_on(asg, k, Value=v, PropagateAtLaunch=False) for k, v in sorted(renamed)]
    with pytest.raises(ClientError, match=f"62 tags; at most {TAGS_PER_ASG}"):
        autoscaling.create_or_update_tags(Tags=first_call[:25])


# -- every call against botocore's service model -------------------------------------------------


def test_every_call_the_handler_makes_matches_botocores_model(cloud, strict):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    v1, v2 = thirty_labels("label"), pool_tags()
    first = len(strict.calls)
    create(nodegroup, v1)
    update(asg, props(nodegroup, v1), props(nodegroup, v2))
    delete(asg, props(nodegroup, v2))
    index.on_event(scaling_event("Create", nodegroup, 0, 4, desired_on_create=1))
    index.on_event(scaling_event("Update", nodegroup, 2, 8))
    index.on_event(scaling_event("Delete", nodegroup, 2, 8))
    assert {call.name for call in strict.calls[first:]} == {
        "autoscaling.CreateOrUpdateTags",
        "autoscaling.DeleteTags",
        "autoscaling.DescribeAutoScalingGroups",
        "eks.DescribeNodegroup",
        "eks.UpdateNodegroupConfig",
    }
    assert strict.invalid_calls() == []


def test_a_call_off_botocores_model_is_reported(cloud, strict):
    """The check itself, shown once: a misspelt member and a wrong type."""
    eks, autoscaling = cloud
    _, asg = _nodegroup_with_asg(eks, autoscaling)
    with pytest.raises(ParamValidationError):
        autoscaling.delete_tags(Tags=[{"ResourceId": asg, "Key": 1, "Propagate": False}])
    (report,) = strict.invalid_calls()
    assert 'Unknown parameter in Tags[0]: "Propagate"' in report
    assert "Invalid type for parameter Tags[0].Key" in report
    strict.calls.clear()  # shown; the fixture's end-of-test check would refuse it


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


def test_only_what_differs_is_sent(cloud, strict):
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    index.on_event(scaling_event("Create", nodegroup, 0, 4))
    scaled_by_the_autoscaler(eks, nodegroup, 3)
    first = len(strict.calls)
    index.on_event(scaling_event("Update", nodegroup, 0, 16))
    index.on_event(scaling_event("Update", nodegroup, 0, 16))
    sent = [c.params for c in strict.calls[first:] if c.name == "eks.UpdateNodegroupConfig"]
    assert sent == [
        {"clusterName": CLUSTER, "nodegroupName": nodegroup, "scalingConfig": {"maxSize": 16}}
    ]


def test_tags_go_in_calls_of_25_naming_the_asg_and_never_propagate(cloud, strict):
    eks, autoscaling = cloud
    nodegroup, asg = _nodegroup_with_asg(eks, autoscaling)
    first = len(strict.calls)
    create(nodegroup, thirty_labels("label"))
    batches = [
        c.params["Tags"] for c in strict.calls[first:] if c.name == "autoscaling.CreateOrUpdateTags"
    ]
    assert [len(batch) for batch in batches] == [25, len(thirty_labels("label")) - 25]
    for tag in (t for batch in batches for t in batch):
        assert (tag["ResourceId"], tag["ResourceType"], tag["PropagateAtLaunch"]) == (
            asg,
            "auto-scaling-group",
            False,
        )


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
    # Bounds unlike the live ones: a Delete taken for an Update would apply them.
    result = index.on_event(scaling_event("Delete", nodegroup, 1, 1))
    assert result == {"PhysicalResourceId": f"{CLUSTER}/{nodegroup}/scaling"}
    assert live_scaling(eks, nodegroup) == {"minSize": 0, "maxSize": 4, "desiredSize": 2}


def test_an_unknown_resource_type_is_refused(cloud):
    """Not taken for another type: tests/synth/test_handler_routing.py ties the handler's
    types to the template's."""
    with pytest.raises(ValueError, match="no resource type 'Custom::GpuPoolOther'"):
        index.on_event({"RequestType": "Create", "ResourceType": "Custom::GpuPoolOther"})


@pytest.mark.parametrize(
    ("sent", "refused"),
    [
        # The bug: new bounds sent without clamping the live desired size (3) into them.
        ({"minSize": 4, "maxSize": 6}, "Minimum capacity 4 can't be greater than desired size 3"),
        ({"maxSize": 2}, "desiredSize 3 can't be greater than maxSize 2"),
        (
            {"minSize": 5, "maxSize": 4, "desiredSize": 4},
            "minSize 5 can't be greater than maxSize 4",
        ),
    ],
    ids=["min-above-desired", "max-below-desired", "min-above-max"],
)
def test_update_nodegroup_config_refuses_a_desired_size_outside_the_bounds(cloud, sent, refused):
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    index.on_event(scaling_event("Create", nodegroup, 0, 8))
    scaled_by_the_autoscaler(eks, nodegroup, 3)
    with pytest.raises(ClientError, match=refused):
        eks.update_nodegroup_config(
            clusterName=CLUSTER, nodegroupName=nodegroup, scalingConfig=sent
        )
    assert live_scaling(eks, nodegroup) == {"minSize": 0, "maxSize": 8, "desiredSize": 3}


def test_update_nodegroup_config_refuses_a_max_below_one(cloud, strict):
    """Refused by EKS and, client-side, by botocore's model (Capacity min 1)."""
    eks, autoscaling = cloud
    nodegroup, _ = _nodegroup_with_asg(eks, autoscaling)
    with pytest.raises(ClientError, match="maxSize 0 is less than 1"):
        index.on_event(scaling_event("Create", nodegroup, 0, 0))
    (report,) = strict.invalid_calls()
    assert "Invalid value for parameter scalingConfig.maxSize, value: 0" in report
    strict.calls.clear()  # shown; the fixture's end-of-test check would refuse it
