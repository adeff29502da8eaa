"""The real Karpenter controller, run with the environment the stack's chart gives it, against
the real control plane and moto; and what EKS and the kubelet do with the instances it launches.

The environment: the stack's karpenter release values rendered by the chart the pinned module
carries (charts/karpenter) with the real helm, the controller container's `env` taken as it is
(cluster name, feature gates, the interruption queue, batch windows, the refresh intervals),
its `valueFrom` entries as the kubelet would fill them. Then, each a test's need:
- KUBECONFIG and CLUSTER_ENDPOINT: the chart runs it in the cluster;
- DISABLE_LEADER_ELECTION: one replica; METRICS_PORT and HEALTH_PROBE_PORT: free loopback ports;
- ISOLATED_VPC: no Pricing API calls (moto serves none; the controller then prices from the
  table built into its release, as in an isolated VPC);
- AWS_ENDPOINT_URL: moto, for EC2, SSM, IAM, EKS and SQS (Karpenter's SDK config honours it);
- a shorter BATCH_MAX_DURATION.
Its log (JSON lines) goes to a file the tests read.

The world (`karpenter_world`): what a deploy leaves for Karpenter in the account, as the
stack's EC2NodeClass names it: the cluster in EKS, its subnets and security group (the
NodeClass's selector terms resolve to moto's ids), the node role (Karpenter makes the instance
profile), the interruption queue, and the EKS NVIDIA AMI's public SSM parameter of the alias's
release, as AWS publishes it (moto refuses /aws/ names through PutParameter, so it is seeded in
moto's SSM backend, which runs in this process).

NodeClaimNodes plays EKS and the kubelet: a NodeClaim that has launched (status.providerID)
registers as its Node, named by the instance's private DNS name, with the NodeClaim's labels,
its taints and startup taints and Karpenter's `karpenter.sh/unregistered` taint (which
Karpenter removes), capacity and allocatable as nodeadm configures them. It also gives the
instance the NodeClass's security groups, as EC2 does from the launch template's network
interfaces: moto 5.2.5's CreateFleet drops them (its fleet launches take the template's
GroupSet only), which Karpenter would read as drift and replace every node.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template
from kubernetes.client.exceptions import ApiException

from tests.e2e.harness.aws_world import reset
from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.control_plane import KWOK_NODE_ANNOTATION
from tests.e2e.harness.nodes import NODEADM_GPU_LABEL, gpu_count, node_resources
from tests.e2e.harness.processes import LoggedProcess, Poller, free_port, moto_environment
from tests.e2e.harness.scenario import Scenario
from tests.e2e.harness.stack_objects import (
    ACCOUNT,
    REGION,
    Release,
    chart_container,
    manifests,
    releases,
)

NODECLAIMS = ("karpenter.sh", "v1", "nodeclaims")
NODEPOOLS = ("karpenter.sh", "v1", "nodepools")
EC2NODECLASSES = ("karpenter.k8s.aws", "v1", "ec2nodeclasses")
UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
# moto's default images include this x86_64 one; the seeded parameter points at it.
AMI = "ami-12c6146b"
ZONES = (f"{REGION}a", f"{REGION}b")
TEST_ENVIRONMENT = {"BATCH_MAX_DURATION": "3s", "BATCH_IDLE_DURATION": "1s"}


def chart_environment(helm: Path, chart: Path, release: Release, work: Path) -> dict[str, str]:
    """The controller container's env as the chart renders the release's values; valueFrom
    entries as the kubelet fills them (the namespace, the CPU request in millicores, the
    memory limit in bytes)."""
    container = chart_container(helm, chart, release, work)
    resources = container.get("resources", {})
    environment = {}
    for variable in container["env"]:
        source = variable.get("valueFrom", {})
        if "value" in variable:
            environment[variable["name"]] = str(variable["value"])
        elif "fieldRef" in source:
            environment[variable["name"]] = release.namespace
        elif source.get("resourceFieldRef", {}).get("resource") == "requests.cpu":
            environment[variable["name"]] = str(_millicores(resources["requests"]["cpu"]))
        elif source.get("resourceFieldRef", {}).get("resource") == "limits.memory":
            environment[variable["name"]] = str(_bytes(resources["limits"]["memory"]))
    return environment


def _millicores(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


def _bytes(memory: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for suffix, factor in units.items():
        if memory.endswith(suffix):
            return int(memory[: -len(suffix)]) * factor
    return int(memory)


class KarpenterController(LoggedProcess):
    """One controller process: started with `start`, ended with `stop`."""

    def __init__(
        self,
        binary: Path,
        environment: dict[str, str],
        cluster: Cluster,
        endpoint: str,
        work_dir: Path,
    ) -> None:
        super().__init__("karpenter", work_dir)
        self.binary, self.environment, self.cluster, self.endpoint = (
            binary,
            environment,
            cluster,
            endpoint,
        )

    def start(self) -> KarpenterController:
        environment = {
            **self.environment,
            **TEST_ENVIRONMENT,
            "KUBECONFIG": str(self.cluster.plane.kubeconfig),
            "CLUSTER_ENDPOINT": self.cluster.plane.server,
            "DISABLE_LEADER_ELECTION": "true",
            "ISOLATED_VPC": "true",
            "METRICS_PORT": str(free_port()),
            "HEALTH_PROBE_PORT": str(free_port()),
            **moto_environment(self.endpoint),
        }
        self.launch([str(self.binary)], environment)
        return self

    def messages(self) -> list[dict[str, Any]]:
        """Its JSON log lines."""
        found = []
        for line in self.log().splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
        return found


@dataclass
class KarpenterWorld:
    """The account as the stack leaves it for Karpenter."""

    endpoint: str
    cluster: str
    resolved: dict[tuple[str, str], str]

    def client(self, service: str) -> Any:
        import boto3

        session = boto3.Session(
            region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        return session.client(service, endpoint_url=self.endpoint)

    def instance(self, instance_id: str) -> dict[str, Any]:
        (reservation,) = self.client("ec2").describe_instances(InstanceIds=[instance_id])[
            "Reservations"
        ]
        return dict(reservation["Instances"][0])


def _seed_ami_parameter(name: str) -> None:
    """The public parameter EKS publishes for an AMI release (its path as Karpenter reads it:
    pkg/providers/amifamily/al2023.go resolvePath), in moto's SSM backend."""
    from moto.ssm.models import Parameter, ssm_backends

    parameters = ssm_backends[ACCOUNT][REGION]._parameters
    defaultdict.__getitem__(parameters, name).append(
        Parameter(
            account_id=ACCOUNT,
            name=name,
            value=AMI,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.now(UTC),
            version=1,
            data_type="text",
        )
    )


def karpenter_world(
    template: Template, endpoint: str, kubernetes_minor: str, *, fresh: bool = True
) -> KarpenterWorld:
    """moto holding what the template's Karpenter pools need (see the module docstring);
    `fresh=False` adds them to what moto holds (a Cluster Autoscaler world beside them)."""
    if fresh:
        reset(endpoint)
    types = {k: r["Type"] for k, r in template.to_json()["Resources"].items()}
    (release,) = [r for r in releases(template) if r.chart == "karpenter"]
    settings = release.values["settings"]
    world = KarpenterWorld(endpoint, settings["clusterName"], {})
    ec2, iam, eks, sqs = (world.client(s) for s in ("ec2", "iam", "eks", "sqs"))
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)["Subnet"][
            "SubnetId"
        ]
        for i, zone in enumerate(ZONES, start=1)
    ]
    group = ec2.create_security_group(GroupName="cluster", Description="cluster", VpcId=vpc)
    eks.create_cluster(
        name=world.cluster,
        version=kubernetes_minor,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": subnets},
    )
    # The NodeClass's selector terms name the stack's subnets and security group by Ref: the
    # world's stand in for them, in the template's order.
    refs = {
        "AWS::EC2::Subnet": iter(subnets * 8),
        "AWS::EC2::SecurityGroup": iter([group["GroupId"]] * 8),
    }
    for logical_id, kind in types.items():
        if kind in refs:
            world.resolved[(logical_id, "Ref")] = next(refs[kind])
        if kind == "AWS::EKS::Cluster":
            world.resolved[(logical_id, "ClusterSecurityGroupId")] = group["GroupId"]
    roles: set[str] = set()
    for manifest in manifests(template):
        for document in manifest.objects:
            if document.get("kind") == "EC2NodeClass" and document["spec"]["role"] not in roles:
                roles.add(document["spec"]["role"])
                iam.create_role(
                    RoleName=document["spec"]["role"],
                    AssumeRolePolicyDocument=json.dumps(
                        {
                            "Statement": [
                                {
                                    "Effect": "Allow",
                                    "Principal": {"Service": "ec2.amazonaws.com"},
                                    "Action": "sts:AssumeRole",
                                }
                            ]
                        }
                    ),
                )
                alias = document["spec"]["amiSelectorTerms"][0]["alias"]
                release_tag = alias.split("@", 1)[1]
                _seed_ami_parameter(
                    f"/aws/service/eks/optimized-ami/{kubernetes_minor}/amazon-linux-2023/x86_64/"
                    f"nvidia/amazon-eks-node-al2023-x86_64-nvidia-{kubernetes_minor}-"
                    f"{release_tag}/image_id"
                )
    if settings.get("interruptionQueue"):
        sqs.create_queue(QueueName=settings["interruptionQueue"])
    return world


def karpenter_objects(template: Template, world: KarpenterWorld) -> list[dict[str, Any]]:
    """The stack's NodePools and EC2NodeClasses, their Refs resolved to the world's ids."""
    return [
        document
        for manifest in manifests(template, world.resolved)
        for document in manifest.objects
        if document.get("kind") in ("NodePool", "EC2NodeClass")
    ]


class NodeClaimNodes(Poller):
    """Registers each launched NodeClaim as its Node (see the module docstring), polled every
    0.3 s; records when each registered."""

    def __init__(
        self, world: KarpenterWorld, cluster: Cluster, on_node: Callable[[dict[str, Any]], Any]
    ) -> None:
        super().__init__()
        self._world, self._cluster, self._on_node = world, cluster, on_node
        self.registered: dict[str, float] = {}

    def sync_once(self) -> None:
        custom, core = self._cluster.custom, self._cluster.core
        claims = custom.list_cluster_custom_object(*NODECLAIMS)["items"]
        registered = {n.spec.provider_id for n in core.list_node().items if n.spec.provider_id}
        for claim in claims:
            provider = claim.get("status", {}).get("providerID")
            if not provider or provider in registered or claim["metadata"].get("deletionTimestamp"):
                continue
            instance_id = provider.rsplit("/", 1)[-1]
            instance = self._world.instance(instance_id)
            if instance["State"]["Name"] != "running":
                continue
            self._security_groups(claim, instance_id)
            node = self._node(claim, instance)
            self._on_node(node)
            self.registered[node["metadata"]["name"]] = time.monotonic()

    def _security_groups(self, claim: dict[str, Any], instance_id: str) -> None:
        name = claim["spec"]["nodeClassRef"]["name"]
        node_class = self._cluster.custom.get_cluster_custom_object(*EC2NODECLASSES, name)
        groups = [g["id"] for g in node_class.get("status", {}).get("securityGroups", [])]
        if groups:
            self._world.client("ec2").modify_instance_attribute(
                InstanceId=instance_id, Groups=groups
            )

    def _node(self, claim: dict[str, Any], instance: dict[str, Any]) -> dict[str, Any]:
        labels = dict(claim["metadata"].get("labels", {}))
        instance_type = instance["InstanceType"]
        zone = instance["Placement"]["AvailabilityZone"]
        name = instance["PrivateDnsName"]
        labels |= {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": REGION,
            **(NODEADM_GPU_LABEL if gpu_count(instance_type) else {}),
        }
        spec = claim["spec"]
        taints = [*spec.get("taints", []), *spec.get("startupTaints", []), UNREGISTERED]
        capacity, allocatable = node_resources(instance_type, 200)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": dict(KWOK_NODE_ANNOTATION)},
            "spec": {"providerID": claim["status"]["providerID"], "taints": taints},
            "status": {"capacity": capacity, "allocatable": allocatable},
        }


@contextmanager
def karpenter_running(
    cluster: Cluster,
    scenario: Scenario,
    template: Template,
    world: KarpenterWorld,
    binary: Path,
    chart: Path,
    *,
    consolidate_after: str = "5s",
    plugins: bool = True,
) -> Iterator[tuple[KarpenterController, NodeClaimNodes]]:
    """The stack's NodePools and EC2NodeClasses applied (their consolidateAfter shortened for
    the test), its device plugin releases installed (`plugins`: not where another harness
    installed them), the controller started with the chart's
    environment and its launches registering as Nodes; after, every NodePool and NodeClass is
    deleted while the controller runs (it finalizes their NodeClaims), then it stops."""
    objects = karpenter_objects(template, world)
    for document in objects:
        if document["kind"] == "NodePool":
            document["spec"]["disruption"]["consolidateAfter"] = consolidate_after
    cluster.apply(objects)
    for plugin in (r for r in releases(template) if r.chart == "nvidia-device-plugin"):
        if plugins:
            scenario.install(plugin)
    (release,) = [r for r in releases(template) if r.chart == "karpenter"]
    work = cluster.work_dir / f"karpenter-{time.monotonic_ns()}"
    work.mkdir()
    environment = chart_environment(cluster.helm_binary, chart, release, work)
    controller = KarpenterController(binary, environment, cluster, world.endpoint, work).start()
    bridge = NodeClaimNodes(world, cluster, scenario.node)
    try:
        with bridge:
            yield controller, bridge
    finally:
        try:
            _remove_pools(cluster, controller, objects)
        finally:
            controller.stop()
            _drop_finalizers(cluster)


def _remove_pools(
    cluster: Cluster, controller: KarpenterController, objects: list[dict[str, Any]]
) -> None:
    """Every NodePool and EC2NodeClass deleted while the controller runs, which then drains
    and terminates their NodeClaims' nodes and removes their finalizers."""
    pools = [*cluster.custom.list_cluster_custom_object(*NODEPOOLS)["items"], *objects]
    for document in pools:
        plural = NODEPOOLS if document["kind"] == "NodePool" else EC2NODECLASSES
        try:
            cluster.custom.delete_cluster_custom_object(*plural, document["metadata"]["name"])
        except ApiException as gone:
            if gone.status != 404:
                raise
    controller.wait(
        "the NodeClaims finalized",
        lambda: not cluster.custom.list_cluster_custom_object(*NODECLAIMS)["items"],
        timeout=60,
    )


def _drop_finalizers(cluster: Cluster) -> None:
    """What a failed test leaves to a stopped controller: its finalizers on NodeClaims, Nodes
    and NodeClasses, removed so the next test's cluster is empty."""
    for claim in cluster.custom.list_cluster_custom_object(*NODECLAIMS)["items"]:
        cluster.custom.patch_cluster_custom_object(
            *NODECLAIMS, claim["metadata"]["name"], {"metadata": {"finalizers": None}}
        )
    for node_class in cluster.custom.list_cluster_custom_object(*EC2NODECLASSES)["items"]:
        cluster.custom.patch_cluster_custom_object(
            *EC2NODECLASSES, node_class["metadata"]["name"], {"metadata": {"finalizers": None}}
        )
    for node in cluster.core.list_node().items:
        if node.metadata.finalizers:
            cluster.core.patch_node(node.metadata.name, {"metadata": {"finalizers": None}})
