"""A stack's GPU node groups as EKS makes them, in moto, and their instances as Nodes.

For each node group of a pool, what a deploy leaves in the account: the EKS node group (its
labels, taints and scaling, as DescribeNodegroup answers them), the Auto Scaling group EKS makes
for it with a launch template of its instance type and EKS's own tags (eks:cluster-name,
eks:nodegroup-name, the discovery tags and kubernetes.io/cluster/<name>: EKS user guide,
"Managed node groups"), min, max and desired size as the stack's scaling resource creates them;
then the stack's tag resource is run through gpu-pool's own handler (cdk/nodegroups/handler),
which writes the node-template tags as a deploy does. `eks_api=False` removes the node groups
from EKS afterwards: the world of an autoscaler that may not call eks:DescribeNodegroup, which
then builds its zero-node template from the ASG tags alone (cloudprovider/aws/aws_manager.go
logs the failed call and goes on).

moto 5.2.5 serves every call this takes and every call Cluster Autoscaler makes here
(DescribeAutoScalingGroups with tag filters, DescribeLaunchTemplateVersions,
DescribeInstanceTypes, SetDesiredCapacity, which launches the instances at once,
TerminateInstanceInAutoScalingGroup, DescribeNodegroup). Where it is kinder than AWS for the
handler's calls, tests/support/strict_aws.py holds the handler to AWS's rules in its own tests.

InstanceNodes plays what EKS and the kubelet do with an instance: once the group's instance is
InService, a Node registers under its private DNS name (as nodeadm names it on AL2023:
awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go, hostname-override) with
`spec.providerID` aws:///<zone>/<instance id>; once the instance is gone (the autoscaler
terminated it), the Node goes, as the cloud node lifecycle controller deletes it.
"""

from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from aws_cdk.assertions import Template

from gpu_pool.cdk.nodegroups.asg_tags import RESOURCE_TYPE as ASG_TAGS
from gpu_pool.cdk.nodegroups.handler.index import on_event
from gpu_pool.cdk.nodegroups.scaling import RESOURCE_TYPE as SCALING
from tests.e2e.harness.nodes import node_group_node
from tests.e2e.harness.pools import POOL_LABEL
from tests.e2e.harness.processes import Poller
from tests.e2e.harness.stack_objects import ACCOUNT, REGION, deployed

NODEGROUP = "AWS::EKS::Nodegroup"
# An AMI moto ships (its default image list); the launch template needs one.
AMI = "ami-12c6146b"
ZONES = (f"{REGION}a", f"{REGION}b")


@dataclass
class NodeGroupInMoto:
    """One node group of the stack, as the world made it."""

    logical_id: str
    name: str
    properties: dict[str, Any]
    asg: str
    tags_logical_id: str


@dataclass
class World:
    """The account as a deploy leaves it: the cluster's name and its GPU node groups."""

    endpoint: str
    cluster: str
    groups: list[NodeGroupInMoto] = field(default_factory=list)

    def client(self, service: str) -> Any:
        return _session().client(service, endpoint_url=self.endpoint)

    def group(self, pool: str, instance_type: str | None = None) -> NodeGroupInMoto:
        """The pool's node group (its group of `instance_type`, for a pool of several)."""
        (found,) = [
            g
            for g in self.groups
            if g.properties["Labels"].get(POOL_LABEL) == pool
            and instance_type in (None, *g.properties["InstanceTypes"])
        ]
        return found

    def asg(self, pool: str, instance_type: str | None = None) -> dict[str, Any]:
        """The pool's Auto Scaling group as DescribeAutoScalingGroups answers it now."""
        autoscaling = self.client("autoscaling")
        (group,) = autoscaling.describe_auto_scaling_groups(
            AutoScalingGroupNames=[self.group(pool, instance_type).asg]
        )["AutoScalingGroups"]
        return dict(group)

    def asg_names(self) -> dict[tuple[str, str], str]:
        """GetAtt <tag resource>.AsgName -> the ASG, for the objects that name it (the
        priority expander's ConfigMap)."""
        return {(g.tags_logical_id, "AsgName"): g.asg for g in self.groups}

    def edit_tags(
        self, pool: str, *, drop: tuple[str, ...] = (), put: dict[str, str] | None = None
    ) -> None:
        """A broken twin's tags: `drop` these keys, `put` these values."""
        autoscaling, asg = self.client("autoscaling"), self.group(pool).asg
        if drop:
            autoscaling.delete_tags(Tags=[_tag(asg, key, "") for key in drop])
        if put:
            autoscaling.create_or_update_tags(Tags=[_tag(asg, k, v) for k, v in put.items()])


def _session() -> boto3.Session:
    return boto3.Session(
        region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def _tag(asg: str, key: str, value: str) -> dict[str, Any]:
    return {
        "ResourceId": asg,
        "ResourceType": "auto-scaling-group",
        "Key": key,
        "Value": value,
        "PropagateAtLaunch": True,
    }


def reset(endpoint: str) -> None:
    """moto with nothing in it (its /moto-api/reset): each world starts from an empty account."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    urllib.request.urlopen(request, timeout=10).read()


@contextmanager
def _aws_environment(endpoint: str) -> Iterator[None]:
    """The handler's boto3 clients (boto3.client) reach moto while it runs."""
    names = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }
    before = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _resources(template: Template, kind: str) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in template.find_resources(kind).items()}


def _of_group(resources: dict[str, dict[str, Any]], group: str) -> tuple[str, dict[str, Any]]:
    """The custom resource (tags, scaling) that names node group `group`."""
    (found,) = [
        (k, p) for k, p in resources.items() if p["NodegroupName"]["Fn::GetAtt"][0] == group
    ]
    return found


def build_world(template: Template, endpoint: str, *, eks_api: bool = True) -> World:
    """The template's GPU pools' node groups in moto (see the module docstring)."""
    reset(endpoint)
    types = {k: r["Type"] for k, r in template.to_json()["Resources"].items()}
    clusters = [deployed({"Ref": k}, types) for k, t in types.items() if t == "AWS::EKS::Cluster"]
    world = World(endpoint, clusters[0] if clusters else "gpu-pool")
    ec2, eks = world.client("ec2"), world.client("eks")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)["Subnet"]
        for i, zone in enumerate(ZONES, start=1)
    ]
    role = f"arn:aws:iam::{ACCOUNT}:role/gpu-pool-nodes"
    eks.create_cluster(
        name=world.cluster,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": [s["SubnetId"] for s in subnets]},
    )
    tag_resources, scaling = _resources(template, ASG_TAGS), _resources(template, SCALING)
    for logical_id, raw in _resources(template, NODEGROUP).items():
        if POOL_LABEL not in raw.get("Labels", {}):
            continue  # the system nodes: no GPU pool's
        properties = deployed(raw, types)
        name = deployed({"Fn::GetAtt": [logical_id, "NodegroupName"]}, types)
        _, sizes = _of_group(scaling, logical_id)
        tags_id, tag_properties = _of_group(tag_resources, logical_id)
        group = _node_group(world, name, properties, sizes, role, subnets)
        world.groups.append(NodeGroupInMoto(logical_id, name, properties, group, tags_id))
        event = {
            "ResourceType": ASG_TAGS,
            "RequestType": "Create",
            "ResourceProperties": deployed(tag_properties, types),
        }
        with _aws_environment(endpoint):
            on_event(event)
    if not eks_api:
        for group in world.groups:
            eks.delete_nodegroup(clusterName=world.cluster, nodegroupName=group.name)
    return world


def _node_group(
    world: World,
    name: str,
    properties: dict[str, Any],
    sizes: dict[str, Any],
    role: str,
    subnets: list[dict[str, Any]],
) -> str:
    """The EKS node group and the ASG EKS makes for it; returns the ASG's name."""
    ec2, eks, autoscaling = world.client("ec2"), world.client("eks"), world.client("autoscaling")
    low, high = int(sizes["MinSize"]), int(sizes["MaxSize"])
    desired = int(sizes["DesiredSizeOnCreate"])
    created = eks.create_nodegroup(
        clusterName=world.cluster,
        nodegroupName=name,
        nodeRole=role,
        subnets=[s["SubnetId"] for s in subnets],
        instanceTypes=properties["InstanceTypes"],
        labels=properties.get("Labels", {}),
        taints=[
            {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]}
            for t in properties.get("Taints", [])
        ],
        scalingConfig={"minSize": low, "maxSize": high, "desiredSize": desired},
        capacityType=properties.get("CapacityType", "ON_DEMAND"),
    )["nodegroup"]
    asg = created["resources"]["autoScalingGroups"][0]["name"]
    ec2.create_launch_template(
        LaunchTemplateName=asg,
        LaunchTemplateData={"ImageId": AMI, "InstanceType": properties["InstanceTypes"][0]},
    )
    eks_tags = {
        "eks:cluster-name": world.cluster,
        "eks:nodegroup-name": name,
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{world.cluster}": "owned",
        f"kubernetes.io/cluster/{world.cluster}": "owned",
    }
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=asg,
        LaunchTemplate={"LaunchTemplateName": asg, "Version": "$Latest"},
        MinSize=low,
        MaxSize=high,
        DesiredCapacity=desired,
        VPCZoneIdentifier=",".join(s["SubnetId"] for s in subnets),
        Tags=[_tag(asg, k, v) for k, v in eks_tags.items()],
    )
    return str(asg)


class InstanceNodes(Poller):
    """Registers each InService instance of the world's groups as its Node, and deletes the
    Node of an instance that is gone; polled every 0.3 s while the autoscaler runs. Records
    when each Node registered and left (the benchmark reads them)."""

    def __init__(self, world: World, core: Any, on_node: Callable[[dict[str, Any]], None]) -> None:
        super().__init__()
        self._world, self._core, self._on_node = world, core, on_node
        self.registered: dict[str, float] = {}
        self.removed: dict[str, float] = {}

    def sync_once(self) -> None:
        autoscaling, ec2 = self._world.client("autoscaling"), self._world.client("ec2")
        by_asg = {g.asg: g for g in self._world.groups}
        groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=sorted(by_asg))
        live: dict[str, tuple[NodeGroupInMoto, dict[str, Any]]] = {}
        for asg in groups["AutoScalingGroups"]:
            for instance in asg["Instances"]:
                if instance["LifecycleState"] == "InService":
                    live[instance["InstanceId"]] = (by_asg[asg["AutoScalingGroupName"]], instance)
        nodes = {
            n.spec.provider_id.rsplit("/", 1)[-1]: n.metadata.name
            for n in self._core.list_node().items
            if (n.spec.provider_id or "").startswith("aws:///")
        }
        for instance_id, (group, instance) in live.items():
            if instance_id in nodes:
                continue
            (reservation,) = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
            name = reservation["Instances"][0]["PrivateDnsName"]
            zone = instance["AvailabilityZone"]
            node = node_group_node(
                name,
                group.properties,
                nodegroup_name=group.name,
                zone=zone,
                instance_type=instance["InstanceType"],
            )
            node["spec"]["providerID"] = f"aws:///{zone}/{instance_id}"
            self._on_node(node)
            self.registered[name] = time.monotonic()
        for instance_id, name in nodes.items():
            if instance_id not in live:
                self._remove(name)

    def _remove(self, name: str) -> None:
        """The Node of a terminated instance, and its pods (forced: no kubelet confirms)."""
        on_node = f"spec.nodeName={name}"
        for pod in self._core.list_pod_for_all_namespaces(field_selector=on_node).items:
            self._core.delete_namespaced_pod(
                pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0
            )
        self._core.delete_node(name)
        self.removed[name] = time.monotonic()
