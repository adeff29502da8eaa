"""The `custom_resources.Provider` on-event handler for gpu-pool's custom resources: two per
node group, the new cluster's Auto Mode guard, and a volume key's grant.

The node group ones take ResourceProperties ClusterName and NodegroupName (the bare name), and
run after their node group exists.

Custom::GpuPoolAsgTags keeps the Cluster Autoscaler tags on the group's ASG equal to the
settings. Properties: Tags ([{Key, Value}]). The physical id is the ASG's name, so a replaced
node group (new ASG) makes CloudFormation send Delete for the old one after the update.
- Create/Update: on Update, first delete the node-template keys the previous properties wrote
  and the new ones lack (a removed label or taint would otherwise stay in the zero-node
  template), then write every tag. Deleting first keeps the ASG under its 50 tags when many
  keys change at once. Only keys under NODE_TEMPLATE_PREFIX that this resource wrote are ever
  deleted: the discovery tags are EKS's own too.
- Delete: delete this resource's node-template keys if the ASG still exists; an ASG that is
  already gone is not an error.

Custom::GpuPoolNodegroupScaling applies MinSize and MaxSize to the group through the EKS API,
with a desired size only where one is needed: DesiredSizeOnCreate on Create; afterwards only
when the live desired size falls outside the new bounds (it is clamped into them). The node
group's own template ScalingConfig never changes (see scaling.py), so CloudFormation never
pushes a desired size onto a group Cluster Autoscaler has scaled.

Custom::GpuPoolAutoModeGuard (ClusterName, AutoMode, TurnOffConfirmed: "true"/"false") refuses
an Update from AutoMode "true" to "false" unless TurnOffConfirmed is "true" or the stack is
rolling back (then the Update restores the previous deploy's properties, and refusing it would
leave the stack in UPDATE_ROLLBACK_FAILED).

Custom::GpuPoolVolumeKeyGrant (KeyArn, GranteePrincipal, Operations) gives EC2 Auto Scaling's
service-linked role a grant on a node group pool's volume key (cdk/volume_key.py). Create and
Update: create the role if the account has none yet, then the grant, named after the stack so a
retried request returns the same grant; the physical id is `<KeyArn>/grant/<GrantId>`, so a new
key (or new operations) is a new grant and CloudFormation deletes the old one. Delete: revoke
the grant; one already gone is not an error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from time import sleep
from typing import Any

import boto3

NODE_TEMPLATE_PREFIX = "k8s.io/cluster-autoscaler/node-template/"
# "The maximum number of tags that you can add or remove using a single call is 25." (EC2 Auto
# Scaling user guide, "Tag Auto Scaling groups and instances", ec2-auto-scaling-tagging.html)
TAGS_PER_CALL = 25


def on_event(event: dict[str, Any], _context: Any = None) -> dict[str, Any]:
    """Route by ResourceType: the types the constructs emit (asg_tags.py, scaling.py; the
    synth tests check the two agree). An unknown type fails loudly rather than being taken for
    another: if a type is ever renamed, keep the old one here until no stack still holds a
    resource of it, or CloudFormation's Delete of the old resources fails."""
    resource_type = event["ResourceType"]
    if resource_type not in HANDLERS:
        raise ValueError(f"gpu-pool's node group handler has no resource type {resource_type!r}")
    return HANDLERS[resource_type](event)


def _scaling(event: dict[str, Any]) -> dict[str, Any]:
    props = event["ResourceProperties"]
    cluster, nodegroup = props["ClusterName"], props["NodegroupName"]
    physical_id = f"{cluster}/{nodegroup}/scaling"
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": physical_id}
    eks = boto3.client("eks")
    live = eks.describe_nodegroup(clusterName=cluster, nodegroupName=nodegroup)["nodegroup"]
    current = live["scalingConfig"]
    low, high = int(props["MinSize"]), int(props["MaxSize"])
    desired = int(props["DesiredSizeOnCreate"]) if event["RequestType"] == "Create" else None
    desired = min(max(current["desiredSize"] if desired is None else desired, low), high)
    wanted = {"minSize": low, "maxSize": high, "desiredSize": desired}
    # Only what differs: a desired size equal to the live one is never sent.
    changes = {key: value for key, value in wanted.items() if current.get(key) != value}
    if changes:
        eks.update_nodegroup_config(
            clusterName=cluster, nodegroupName=nodegroup, scalingConfig=changes
        )
    return {"PhysicalResourceId": physical_id}


def _asg_tags(event: dict[str, Any]) -> dict[str, Any]:
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
    if request == "Update" and event["PhysicalResourceId"] == asg:
        _delete(autoscaling, asg, _owned(_tags(event["OldResourceProperties"])) - tags.keys())
    _write(autoscaling, asg, tags)
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
    items = [
        {**_tag(asg, key), "Value": value, "PropagateAtLaunch": False}
        for key, value in sorted(tags.items())
    ]
    _in_batches(autoscaling.create_or_update_tags, items)


def _delete(autoscaling: Any, asg: str, keys: set[str]) -> None:
    """Delete by key alone. EC2 Auto Scaling user guide, "Delete tags" (delete-tag.html): "You
    must specify the tag key, but you don't have to specify the value. If you specify a value
    and the value is incorrect, the tag is not deleted." Any Value (an empty one included) that
    is not the live one would leave the tag, and a key this resource wrote may since have been
    changed by someone else: naming the key alone deletes it whatever its value."""
    _in_batches(autoscaling.delete_tags, [_tag(asg, key) for key in sorted(keys)])


def _in_batches(call: Callable[..., Any], items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), TAGS_PER_CALL):
        call(Tags=items[start : start + TAGS_PER_CALL])


def _tag(asg: str, key: str) -> dict[str, Any]:
    """The tag `key` on the ASG, as both tag calls name it."""
    return {"ResourceId": asg, "ResourceType": "auto-scaling-group", "Key": key}


def _auto_mode_guard(event: dict[str, Any]) -> dict[str, Any]:
    """Fail an update that turns EKS Auto Mode off, unless the settings say so. The cluster
    depends on this resource, so CloudFormation updates it first and a failure here rolls the
    deploy back before the cluster changes. The old and new properties are all it needs, but
    for one question it asks CloudFormation only when it would refuse (_rolling_back)."""
    props = event["ResourceProperties"]
    if event["RequestType"] == "Update":
        was_on = event["OldResourceProperties"].get("AutoMode") == "true"
        turns_off = was_on and props["AutoMode"] != "true"
        if turns_off and props.get("TurnOffConfirmed") != "true" and not _rolling_back(event):
            raise ValueError(
                f"gpu-pool: this deploy turns EKS Auto Mode off on cluster {props['ClusterName']}, "
                "which terminates its Auto Mode instances and deletes the load balancers it "
                "manages (EKS user guide, 'Disable EKS Auto Mode'). Set cluster.auto_mode: true "
                "to keep it, or cluster.auto_mode: false to turn it off."
            )
    return {"PhysicalResourceId": f"{props['ClusterName']}/auto-mode"}


def _rolling_back(event: dict[str, Any]) -> bool:
    """Whether this Update is CloudFormation rolling a failed update back. A failed deploy that
    turned Auto Mode on rolls the guard back from on to off: CloudFormation sends an Update
    whose ResourceProperties are the previous deploy's and OldResourceProperties the failed
    one's, with no field telling a rollback from a deploy (CloudFormation user guide, "Update
    request for CloudFormation custom resources"). The stack's status does: DescribeStacks on
    the request's StackId (the stack's ARN) answers UPDATE_ROLLBACK_IN_PROGRESS while an update
    rolls back, a continued rollback included (CloudFormation API reference, Stack.StackStatus;
    ContinueUpdateRollback). Refusing then would leave the stack in UPDATE_ROLLBACK_FAILED, and
    the rollback only restores what was deployed before the failed deploy."""
    cloudformation = boto3.client("cloudformation")
    (stack,) = cloudformation.describe_stacks(StackName=event["StackId"])["Stacks"]
    return bool(stack["StackStatus"] == "UPDATE_ROLLBACK_IN_PROGRESS")


def _volume_key_grant(event: dict[str, Any]) -> dict[str, Any]:
    props = event["ResourceProperties"]
    kms = boto3.client("kms")
    if event["RequestType"] == "Delete":
        key, found, grant = event["PhysicalResourceId"].partition(_GRANT)
        if found:  # else the Create failed before a grant existed
            with contextlib.suppress(kms.exceptions.NotFoundException):
                kms.revoke_grant(KeyId=key, GrantId=grant)
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    new_role = _ensure_service_linked_role(props["GranteePrincipal"])
    for attempt in range(_GRANT_ATTEMPTS):
        try:
            created = kms.create_grant(
                KeyId=props["KeyArn"],
                GranteePrincipal=props["GranteePrincipal"],
                Operations=props["Operations"],
                # "When this value is present, you can retry a CreateGrant request with
                # identical parameters; if the grant already exists, the original GrantId is
                # returned" (KMS API reference, CreateGrant Name). A grant per stack and key.
                Name=_grant_name(event["StackId"]),
            )
            break
        except kms.exceptions.InvalidArnException:
            # A role IAM created a moment ago may not be visible to KMS yet (IAM is
            # eventually consistent: IAM user guide, "Changes that I make are not always
            # immediately visible"); only then is the grantee retried, for about a minute.
            if not new_role or attempt == _GRANT_ATTEMPTS - 1:
                raise
            sleep(2 * (attempt + 1))
    return {"PhysicalResourceId": f"{props['KeyArn']}{_GRANT}{created['GrantId']}"}


# CreateGrant attempts after creating the service-linked role: 2+4+...+14 s = 56 s of waits.
_GRANT_ATTEMPTS = 8


_GRANT = "/grant/"


def _grant_name(stack_id: str) -> str:
    """`gpu-pool-<stack name>-<stack uuid>` from arn:...:stack/<name>/<uuid>; a grant name
    allows letters, digits and `:/_-` (KMS API reference, CreateGrant Name)."""
    name, uuid = stack_id.split(":stack/", 1)[1].split("/", 1)
    return f"gpu-pool-{name}-{uuid}"


def _ensure_service_linked_role(role_arn: str) -> bool:
    """Create the service-linked role unless it exists (True when created now): the grantee
    must be a principal of the account (KMS API reference, CreateGrant GranteePrincipal), and
    EC2 Auto Scaling creates the role only with an account's first ASG, which may be the node
    group that needs this grant. IAM answers InvalidInput when the role exists ("Service role
    name AWSServiceRoleForAutoScaling has been taken in this account", as recorded in
    DataDog/pathfinding-labs#23)."""
    service = role_arn.split("/aws-service-role/", 1)[1].split("/", 1)[0]
    iam = boto3.client("iam")
    try:
        iam.create_service_linked_role(AWSServiceName=service)
    except iam.exceptions.InvalidInputException:
        return False
    return True


HANDLERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "Custom::GpuPoolAsgTags": _asg_tags,
    "Custom::GpuPoolNodegroupScaling": _scaling,
    "Custom::GpuPoolAutoModeGuard": _auto_mode_guard,
    "Custom::GpuPoolVolumeKeyGrant": _volume_key_grant,
}
