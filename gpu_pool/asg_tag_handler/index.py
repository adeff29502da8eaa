"""Keeps the Cluster Autoscaler tags on one managed node group's ASG equal to the settings.

A `custom_resources.Provider` on-event handler. ResourceProperties: ClusterName, NodegroupName
(the bare name) and Tags ([{Key, Value}]). The physical id is the ASG's name, so a replaced node
group (new ASG) makes CloudFormation send Delete for the old one after the update.

- Create/Update: write every tag; on Update, delete the node-template keys the previous
  properties wrote and the new ones lack (a removed label or taint would otherwise stay in the
  zero-node template). Only keys under NODE_TEMPLATE_PREFIX that this resource wrote are ever
  deleted: the discovery tags are EKS's own too.
- Delete: delete this resource's node-template keys if the ASG still exists; an ASG that is
  already gone is not an error.
"""

from __future__ import annotations

from typing import Any

import boto3

NODE_TEMPLATE_PREFIX = "k8s.io/cluster-autoscaler/node-template/"
# CreateOrUpdateTags and DeleteTags take at most 25 tags per call (EC2 Auto Scaling quotas).
TAGS_PER_CALL = 25


def on_event(event: dict[str, Any], _context: Any = None) -> dict[str, Any]:
    request = event["RequestType"]
    props = event["ResourceProperties"]
    autoscaling = boto3.client("autoscaling")
    if request == "Delete":
        asg = event["PhysicalResourceId"]
        if _exists(autoscaling, asg):
            _delete(autoscaling, asg, _owned(_tags(props)))
        return {"PhysicalResourceId": asg}
    asg = _asg_name(props["ClusterName"], props["NodegroupName"])
    tags = _tags(props)
    _write(autoscaling, asg, tags)
    if request == "Update" and event["PhysicalResourceId"] == asg:
        stale = _owned(_tags(event["OldResourceProperties"])) - tags.keys()
        _delete(autoscaling, asg, stale)
    return {"PhysicalResourceId": asg, "Data": {"AsgName": asg}}


def _asg_name(cluster: str, nodegroup: str) -> str:
    described = boto3.client("eks").describe_nodegroup(clusterName=cluster, nodegroupName=nodegroup)
    return str(described["nodegroup"]["resources"]["autoScalingGroups"][0]["name"])


def _tags(props: dict[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in props["Tags"]}


def _owned(tags: dict[str, str]) -> set[str]:
    return {key for key in tags if key.startswith(NODE_TEMPLATE_PREFIX)}


def _exists(autoscaling: Any, asg: str) -> bool:
    found = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg])
    return bool(found["AutoScalingGroups"])


def _write(autoscaling: Any, asg: str, tags: dict[str, str]) -> None:
    items = [_tag(asg, key, value) for key, value in sorted(tags.items())]
    for start in range(0, len(items), TAGS_PER_CALL):
        autoscaling.create_or_update_tags(Tags=items[start : start + TAGS_PER_CALL])


def _delete(autoscaling: Any, asg: str, keys: set[str]) -> None:
    items = [_tag(asg, key) for key in sorted(keys)]
    for start in range(0, len(items), TAGS_PER_CALL):
        autoscaling.delete_tags(Tags=items[start : start + TAGS_PER_CALL])


def _tag(asg: str, key: str, value: str = "") -> dict[str, Any]:
    return {
        "ResourceId": asg,
        "ResourceType": "auto-scaling-group",
        "Key": key,
        "Value": value,
        "PropagateAtLaunch": False,
    }
