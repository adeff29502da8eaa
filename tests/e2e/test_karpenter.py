"""The real Karpenter 1.15.0 controller launches the stack's Karpenter pools' GPU nodes: it
reads the stack's NodePool and EC2NodeClass (Karpenter's own CRDs from its module), launches
through moto's EC2 (CreateFleet) with the environment the stack's chart renders, and its
NodeClaims become Nodes the real scheduler places the pods on. Each scenario asserts what the
controller did: its NodeClaims, the instance it launched, the node."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.e2e.harness.autoscaler import autoscaled
from tests.e2e.harness.aws_world import build_world
from tests.e2e.harness.karpenter import (
    EC2NODECLASSES,
    NODECLAIMS,
    karpenter_objects,
    karpenter_running,
    karpenter_world,
)
from tests.e2e.harness.nodes import GPU_RESOURCE
from tests.e2e.harness.pools import POOL_LABEL, smoke_test_pod, workload_pod
from tests.e2e.harness.scenario import ran_on
from tests.e2e.verdicts import with_crds
from tests.support.cfn import synth
from tests.support.settings import GPU_TAINT

pytestmark = pytest.mark.e2e

RAN = ("Running", "Succeeded")
MINOR = "1.36"
KARPENTER_POOL = {
    "pools": {
        "gpu": {
            "provisioner": "karpenter",
            "instance_types": ["g5.xlarge", "g5.2xlarge"],
            "max_size": 2,
        }
    }
}


def _claims(cluster) -> list[dict]:
    return list(cluster.custom.list_cluster_custom_object(*NODECLAIMS)["items"])


def _settings_file(tmp_path: Path, settings: dict) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def test_a_pending_gpu_pod_gets_a_node_of_the_pools_types_and_consolidation_removes_it(
    cluster, scenario, aws_endpoint, karpenter_binary, karpenter_chart, tmp_path
):
    """The seed's, on a Karpenter pool: a pending `nvidia.com/gpu: 1` pod makes the controller
    launch one On-Demand instance of one of the pool's types; it joins with the pool's labels
    and taint, the device plugin lands, Karpenter initializes it once the GPU is advertised,
    and the pod runs; once the pod is gone, consolidation (WhenEmpty) removes the node and
    terminates the instance."""
    with_crds(cluster)
    template = synth(KARPENTER_POOL)
    world = karpenter_world(template, aws_endpoint, MINOR)
    with karpenter_running(
        cluster, scenario, template, world, karpenter_binary, karpenter_chart
    ) as (karpenter, nodes):
        pod = smoke_test_pod(_settings_file(tmp_path, KARPENTER_POOL), "gpu")
        name = scenario.pod(pod)
        (claim,) = karpenter.wait(
            "a NodeClaim launched",
            lambda: [c for c in _claims(cluster) if c.get("status", {}).get("providerID")],
        )
        labels = claim["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] in ("g5.xlarge", "g5.2xlarge")
        assert labels["karpenter.sh/capacity-type"] == "on-demand"
        assert labels[POOL_LABEL] == "gpu"
        instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]
        assert (
            world.instance(instance_id)["InstanceType"]
            == labels["node.kubernetes.io/instance-type"]
        )
        (node,) = karpenter.wait("the NodeClaim's node", lambda: list(nodes.registered))
        ran_on(cluster, karpenter.wait, name, node)
        joined = cluster.core.read_node(node)
        assert {(t.key, t.effect) for t in joined.spec.taints or []} >= {
            ("nvidia.com/gpu", "NoSchedule")
        }
        assert "karpenter.sh/unregistered" not in {t.key for t in joined.spec.taints or []}
        assert joined.status.allocatable[GPU_RESOURCE] == "1"
        cluster.core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
        karpenter.wait(
            "consolidation removed the NodeClaim", lambda: not _claims(cluster), timeout=90
        )
        karpenter.wait(
            "the instance terminated",
            lambda: world.instance(instance_id)["State"]["Name"] in ("shutting-down", "terminated"),
        )


SEVERAL = {
    "pools": {
        # Two GPUs at most: the NodePool's limits.
        "small": {"provisioner": "karpenter", "instance_types": ["g5.xlarge"], "max_size": 2},
        # 1-GPU nodes only, room for eight.
        "single": {"provisioner": "karpenter", "instance_types": ["g5.xlarge"], "max_size": 8},
        "big": {
            "provisioner": "karpenter",
            "instance_types": ["g5.xlarge", "g5.48xlarge"],
            "max_size": 2,
        },
        "spot": {
            "provisioner": "karpenter",
            "instance_types": ["g5.xlarge"],
            "capacity_type": "SPOT",
            "max_size": 2,
        },
    }
}


def _pool_claims(cluster, pool: str) -> list[dict]:
    """The pool's NodeClaims that have launched (an instance, its type known)."""
    return [
        c
        for c in _claims(cluster)
        if c["metadata"]["labels"].get(POOL_LABEL) == pool and c.get("status", {}).get("providerID")
    ]


def _karpenter_event(cluster, pod: str) -> str | None:
    """Karpenter's last word on the pod (its events: where it should schedule, or why not)."""
    uid = cluster.core.read_namespaced_pod(pod, "default").metadata.uid
    events = cluster.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.uid={uid}"
    )
    said = [e.message for e in events.items if e.source.component == "karpenter"]
    return said[-1] if said else None


def _twin_excluding_every_gpu_type(template, world) -> dict:
    """The small pool's NodePool as a broken twin: pool `twin`, its instance types CPU ones."""
    (pool,) = [
        o
        for o in karpenter_objects(template, world)
        if o["kind"] == "NodePool" and o["metadata"]["name"] == "gpu-pool-small"
    ]
    twin = copy.deepcopy(pool)
    twin["metadata"] = {"name": "gpu-pool-twin"}
    twin["spec"]["template"]["metadata"]["labels"][POOL_LABEL] = "twin"
    for requirement in twin["spec"]["template"]["spec"]["requirements"]:
        if requirement["key"] == "node.kubernetes.io/instance-type":
            requirement["values"] = ["m5.large"]
    return twin


def test_limits_types_and_capacity_types_hold_and_a_twin_allowing_no_gpu_type_launches_none(
    cluster, scenario, aws_endpoint, karpenter_binary, karpenter_chart
):
    """Three 1-GPU pods on the pool of two GPUs at most: two nodes, and the third waits (its
    NodePool's limits, as Karpenter says); an 8-GPU pod gets a g5.48xlarge from the pool that
    lists it, none from the pool that does not; the Spot pool's pod a Spot instance, the others
    On-Demand; the broken twin, a NodePool whose requirements allow no GPU type (what gpu-pool
    refuses at synth: GP-CATALOG-02), launches nothing and Karpenter says why."""
    with_crds(cluster)
    template = synth(SEVERAL)
    world = karpenter_world(template, aws_endpoint, MINOR)
    with karpenter_running(
        cluster, scenario, template, world, karpenter_binary, karpenter_chart
    ) as (karpenter, _):
        cluster.apply([_twin_excluding_every_gpu_type(template, world)])
        small = [
            scenario.pod(workload_pod(f"small-{i}", 1, {POOL_LABEL: "small"}, [GPU_TAINT]))
            for i in range(3)
        ]
        big = scenario.pod(workload_pod("big-8", 8, {POOL_LABEL: "big"}, [GPU_TAINT]))
        too_big = scenario.pod(workload_pod("single-8", 8, {POOL_LABEL: "single"}, [GPU_TAINT]))
        twin = scenario.pod(workload_pod("twin-1", 1, {POOL_LABEL: "twin"}, [GPU_TAINT]))
        scenario.pod(workload_pod("spot-1", 1, {POOL_LABEL: "spot"}, [GPU_TAINT]))
        (spot,) = karpenter.wait("the Spot pool's NodeClaim", lambda: _pool_claims(cluster, "spot"))
        # Spot as the pool says: the claim, and the instance CreateFleet launched.
        assert spot["metadata"]["labels"]["karpenter.sh/capacity-type"] == "spot"
        spot_instance = world.instance(spot["status"]["providerID"].rsplit("/", 1)[-1])
        assert spot_instance.get("InstanceLifecycle") == "spot"
        for pool in ("small", "big"):
            assert {
                c["metadata"]["labels"]["karpenter.sh/capacity-type"]
                for c in _pool_claims(cluster, pool)
            } <= {"on-demand"}
        (claim,) = karpenter.wait("the big pool's NodeClaim", lambda: _pool_claims(cluster, "big"))
        assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "g5.48xlarge"
        claims = karpenter.wait(
            "the small pool's two NodeClaims",
            lambda: len(found := _pool_claims(cluster, "small")) == 2 and found,
        )
        assert {c["metadata"]["labels"]["node.kubernetes.io/instance-type"] for c in claims} == {
            "g5.xlarge"
        }
        said = {
            pod: karpenter.wait(
                f"Karpenter's word on {pod}", lambda pod=pod: _karpenter_event(cluster, pod)
            )
            for pod in (*small, big, too_big, twin)
        }
        assert said[big] == f"Pod should schedule on: nodeclaim/{claim['metadata']['name']}"
        # Which of the three pods waits is Karpenter's choice; that one waits for the limits,
        # as its log says in full (the pod's event lists every pool's reason, in no set order).
        waiting = [pod for pod, m in said.items() if pod in small and m.startswith("Failed")]
        assert len(waiting) == 1
        assert [
            m
            for m in karpenter.messages()
            if m.get("message") == "could not schedule pod"
            and m.get("Pod", {}).get("name") == waiting[0]
            and "all available instance types exceed limits for nodepool (NodePool=gpu-pool-small)"
            in m.get("error", "")
        ]
        assert "no instance type has enough resources" in said[too_big]
        assert "node.kubernetes.io/instance-type In [g5.xlarge]" in said[too_big]
        assert _pool_claims(cluster, "single") == [] and _pool_claims(cluster, "twin") == []
        twin_skipped = [
            m
            for m in karpenter.messages()
            if m.get("message") == "skipping, nodepool requirements filtered out all instance types"
            and m.get("NodePool", {}).get("name") == "gpu-pool-twin"
        ]
        assert twin_skipped
        assert len(_pool_claims(cluster, "small")) == 2


# One cluster, both provisioners: a Cluster Autoscaler pool and a Karpenter pool.
MIXED = {
    "pools": {
        "groups": {"instance_types": ["g5.xlarge"], "max_size": 2},
        "claims": {"provisioner": "karpenter", "instance_types": ["g5.xlarge"], "max_size": 2},
    }
}


def test_mixed_provisioners_each_scale_their_own_pools_pods_and_never_both(
    cluster,
    scenario,
    aws_endpoint,
    karpenter_binary,
    karpenter_chart,
    autoscaler_binary,
    autoscaler_chart,
):
    """The real Cluster Autoscaler and the real Karpenter on one cluster: the node group pool's
    pod starts its ASG and no NodeClaim; the Karpenter pool's pod a NodeClaim and no ASG (CA
    says no group fits it)."""
    with_crds(cluster)
    template = synth(MIXED)
    world = build_world(template, aws_endpoint)
    claims_world = karpenter_world(template, aws_endpoint, MINOR, fresh=False)
    with (
        autoscaled(
            cluster, scenario, template, world, autoscaler_binary, autoscaler_chart, nodes=False
        ) as run,
        karpenter_running(
            cluster,
            scenario,
            template,
            claims_world,
            karpenter_binary,
            karpenter_chart,
            plugins=False,
        ) as (karpenter, _),
    ):
        groups = scenario.pod(workload_pod("groups-1", 1, {POOL_LABEL: "groups"}, [GPU_TAINT]))
        claims = scenario.pod(workload_pod("claims-1", 1, {POOL_LABEL: "claims"}, [GPU_TAINT]))
        asg = world.asg("groups")
        assert run.event(groups, "TriggeredScaleUp") == (
            f"pod triggered scale-up: [{{{asg['AutoScalingGroupName']} 0->1 (max: 2)}}]"
        )
        (claim,) = karpenter.wait(
            "the Karpenter pool's NodeClaim", lambda: _pool_claims(cluster, "claims")
        )
        assert claim["metadata"]["labels"][POOL_LABEL] == "claims"
        assert run.event(claims, "NotTriggerScaleUp").startswith("pod didn't trigger scale-up:")
        # Never both: no NodeClaim for the node group pool's pod, no ASG for the other's.
        assert _pool_claims(cluster, "groups") == []
        assert int(world.asg("groups")["DesiredCapacity"]) == 1


def test_a_twin_node_class_without_the_pools_role_launches_nothing_and_says_why(
    cluster, scenario, aws_endpoint, karpenter_binary, karpenter_chart
):
    """The broken twin of the stack's EC2NodeClass: the same class with a role that does not
    exist (the stack always names its node role: a KarpenterNodePool takes it from its
    Karpenter, which the library requires). Karpenter cannot make its instance profile, says so
    in the class's status, and launches nothing for the twin's pool."""
    with_crds(cluster)
    template = synth(KARPENTER_POOL)
    world = karpenter_world(template, aws_endpoint, MINOR)
    objects = karpenter_objects(template, world)
    (node_class,) = [o for o in objects if o["kind"] == "EC2NodeClass"]
    (pool,) = [o for o in objects if o["kind"] == "NodePool"]
    twin_class = copy.deepcopy(node_class)
    twin_class["metadata"] = {"name": "gpu-pool-norole"}
    twin_class["spec"]["role"] = "gpu-pool-no-such-role"
    twin_pool = copy.deepcopy(pool)
    twin_pool["metadata"] = {"name": "gpu-pool-norole"}
    twin_pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "gpu-pool-norole"
    twin_pool["spec"]["template"]["metadata"]["labels"][POOL_LABEL] = "norole"
    with karpenter_running(
        cluster, scenario, template, world, karpenter_binary, karpenter_chart, plugins=False
    ) as (karpenter, _):
        cluster.apply([twin_class, twin_pool])
        scenario.pod(workload_pod("norole-1", 1, {POOL_LABEL: "norole"}, [GPU_TAINT]))

        def refused() -> list[dict]:
            return [
                m
                for m in karpenter.messages()
                if m.get("EC2NodeClass", {}).get("name") == "gpu-pool-norole"
                and m.get("role") == "gpu-pool-no-such-role"
                and "role not found" in m.get("error", "")
            ]

        # Karpenter's own word: it cannot make the class's instance profile, and keeps the
        # twin's NodePool out of provisioning.
        karpenter.wait("Karpenter refusing the twin class's role", refused)
        karpenter.wait(
            "the twin's NodePool ignored",
            lambda: [
                m
                for m in karpenter.messages()
                if m.get("message") == "ignoring nodepool, not ready"
                and m.get("NodePool", {}).get("name") == "gpu-pool-norole"
            ],
        )
        status = cluster.custom.get_cluster_custom_object(*EC2NODECLASSES, "gpu-pool-norole")
        ready = {c["type"]: c["status"] for c in status.get("status", {}).get("conditions", [])}
        assert ready.get("Ready") != "True"
        assert _pool_claims(cluster, "norole") == []
