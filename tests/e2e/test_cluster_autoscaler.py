"""The real Cluster Autoscaler (built from its 1.36.1 release source) scales the stack's pools
from zero and back: it reads the ASGs the stack's tag handler tagged in moto, decides with the
arguments the stack's chart renders (the priority expander, balancing), and its launches become
Nodes the real scheduler places the pods on. Each scenario asserts what CA did: its events on
the pods, the ASG's desired capacity, the nodes. Broken twins run the same CA against tags a
bug would write, and name the reason from CA's own events."""

from __future__ import annotations

import pytest

from tests.e2e.harness.autoscaler import autoscaled
from tests.e2e.harness.aws_world import build_world
from tests.e2e.harness.nodes import GPU_RESOURCE
from tests.e2e.harness.pools import POOL_LABEL, smoke_test_pod, workload_pod
from tests.e2e.harness.scenario import ran_on
from tests.support.cfn import synth
from tests.support.settings import GPU_TAINT, SHARING

pytestmark = pytest.mark.e2e

RAN = ("Running", "Succeeded")


def _desired(world, pool: str) -> int:
    return int(world.asg(pool)["DesiredCapacity"])


def test_a_pending_gpu_pod_scales_its_pool_from_zero_and_back(
    cluster, scenario, default_template, aws_endpoint, autoscaler_binary, autoscaler_chart
):
    """The seed's own: the default app's pool at zero nodes, one pending `nvidia.com/gpu: 1`
    pod. CA scales that ASG 0 -> 1 from its tags (no node of the group ever existed), the
    instance joins as the group's node, the device plugin lands, the pod runs; once it is
    deleted, CA removes the empty node and the group is back at 0."""
    world = build_world(default_template, aws_endpoint)
    asg = world.group("gpu").asg
    with autoscaled(
        cluster, scenario, default_template, world, autoscaler_binary, autoscaler_chart
    ) as run:
        name = scenario.pod(smoke_test_pod(None, "gpu"))
        message = run.event(name, "TriggeredScaleUp")
        assert message == f"pod triggered scale-up: [{{{asg} 0->1 (max: 8)}}]"
        assert _desired(world, "gpu") == 1
        (node,) = run.wait("the instance's node", lambda: list(run.nodes.registered))
        ran_on(cluster, run.wait, name, node)
        # CA learns the instance's group at its next ASG refresh (harness/autoscaler.py).
        run.autoscaler.restart()
        cluster.core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
        run.wait("the group back at 0", lambda: _desired(world, "gpu") == 0, timeout=90)
        run.wait("the node gone", lambda: node in run.nodes.removed)
        assert run.autoscaler.logged(f'Scale-down: removing empty node "{node}"')
        # Every AWS call went to moto: none to AWS's own endpoints.
        assert not run.autoscaler.logged("amazonaws.com")


TRAINING_TAINT = {"key": "dedicated", "value": "training", "effect": "NoSchedule"}
# Three pools the priority expander must tell apart: a 1-GPU and an 8-GPU type with the same
# labels, and a training pool behind a second taint.
SEVERAL_POOLS = {
    "pools": {
        "small": {"instance_types": ["g5.xlarge"], "max_size": 4},
        # Room for the second node CA may add (below): at its max, CA would give the CPU pod's
        # refusal "max node group size reached" for this group instead of its taint.
        "big": {"instance_types": ["g5.48xlarge"], "max_size": 4},
        "training": {
            "instance_types": ["p5.48xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "training"},
            "taints": [GPU_TAINT, TRAINING_TAINT],
            "max_size": 2,
        },
    }
}


def _scaled(world, pool: str, to: int, instance_type: str | None = None) -> str:
    """CA's event text for one scale-up of the pool's ASG (its group of `instance_type`, for
    a pool of several) from 0."""
    group = world.asg(pool, instance_type)
    return f"{{{group['AutoScalingGroupName']} 0->{to} (max: {group['MaxSize']})}}"


def test_each_pod_starts_the_group_the_priority_expander_ranks_first_that_fits_it(
    cluster, scenario, aws_endpoint, autoscaler_binary, autoscaler_chart
):
    """Several pools, one pending pod each, all at once: a 1-GPU pod starts the 1-GPU type
    (the priority expander ranks fewest GPUs first, where least-waste alone picks at random),
    an 8-GPU pod the 8-GPU type, a pod of the training taint only the training pool; a CPU
    pod starts no GPU group (every one is tainted) and CA says why."""
    template = synth(SEVERAL_POOLS)
    world = build_world(template, aws_endpoint)
    nvidia = {"accelerator": "nvidia"}
    with autoscaled(
        cluster, scenario, template, world, autoscaler_binary, autoscaler_chart, nodes=False
    ) as run:
        one = scenario.pod(workload_pod("one-gpu", 1, nvidia, [GPU_TAINT]))
        eight = scenario.pod(workload_pod("eight-gpus", 8, nvidia, [GPU_TAINT]))
        training = scenario.pod(
            workload_pod("training", 1, {"workload": "training"}, [GPU_TAINT, TRAINING_TAINT])
        )
        cpu = scenario.pod(workload_pod("cpu-work", 0, {}, []))
        assert run.event(one, "TriggeredScaleUp") == (
            f"pod triggered scale-up: [{_scaled(world, 'small', 1)}]"
        )
        assert run.event(eight, "TriggeredScaleUp") == (
            f"pod triggered scale-up: [{_scaled(world, 'big', 1)}]"
        )
        assert run.event(training, "TriggeredScaleUp") == (
            f"pod triggered scale-up: [{_scaled(world, 'training', 1)}]"
        )
        refused = run.event(cpu, "NotTriggerScaleUp")
        assert refused.startswith("pod didn't trigger scale-up:")
        assert "3 node(s) had untolerated taint" in refused
        # Each group started once for its pod. A later loop may add a second 8-GPU node: CA packs
        # the pending pods onto the upcoming nodes in no set order, and once it put the 1-GPU
        # pod on the 8-GPU type's upcoming node the 8-GPU pod had none and scaled that group
        # 1->2 (seen on this harness). A pod that must not take a big node selects its pool.
        assert [_desired(world, p) for p in ("small", "training")] == [1, 1]
        assert _desired(world, "big") in (1, 2)


# The same type twice: On-Demand, and launched into an On-Demand Capacity Reservation (paid for
# whether used or not).
RESERVED_AND_ON_DEMAND = {
    "pools": {
        "on-demand": {"instance_types": ["g5.xlarge"], "max_size": 4},
        "reserved": {
            "instance_types": ["g5.xlarge"],
            "max_size": 4,
            "capacity_reservation": {"type": "odcr", "id": "cr-0fedcba9876543210"},
        },
    }
}


def test_a_reserved_group_is_scaled_before_an_on_demand_one_of_the_same_type(
    cluster, scenario, aws_endpoint, autoscaler_binary, autoscaler_chart
):
    """Both groups fit the pod alike (least-waste would pick at random): the priority expander
    ranks the reserved group first, so the reservation's paid-for capacity is used."""
    template = synth(RESERVED_AND_ON_DEMAND)
    world = build_world(template, aws_endpoint)
    with autoscaled(
        cluster, scenario, template, world, autoscaler_binary, autoscaler_chart, nodes=False
    ) as run:
        pod = scenario.pod(workload_pod("one-gpu", 1, {"accelerator": "nvidia"}, [GPU_TAINT]))
        assert run.event(pod, "TriggeredScaleUp") == (
            f"pod triggered scale-up: [{_scaled(world, 'reserved', 1)}]"
        )
        assert _desired(world, "on-demand") == 0


# The shared pools (tests/support/settings.py SHARING): 4 time-sliced shares of each GPU,
# 8 renamed shares (nvidia.com/gpu.shared), and mixed MIG slices on p5.48xlarge (two 1g.10gb
# a GPU). The stack tags each zero-node template with what its nodes will advertise; the twin,
# a copy of the 4-share pool on one type without the GPU resource tag, is what CA sees
# without it: its own table's 1 GPU.
SHARES_TAG = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
SHARED_WITH_TWIN = {
    "pools": {
        **SHARING["pools"],
        "twin": {**SHARING["pools"]["slices"], "instance_types": ["g6.xlarge"], "max_size": 8},
    }
}


# pool, the resource its pods ask one of, how many fit one node, the nodes per_node + 1 take.
SHARE_CASES = (
    ("slices", GPU_RESOURCE, 4, 2),
    ("shared", "nvidia.com/gpu.shared", 8, 2),
    ("mig", "nvidia.com/mig-1g.10gb", 16, 2),
    # The broken twin: a node for each share, each GPU paid for three quarters idle.
    ("twin", GPU_RESOURCE, 4, 5),
)


def test_shared_pools_scale_by_their_shares_and_the_twin_without_the_tag_by_whole_gpus(
    cluster, scenario, aws_endpoint, autoscaler_binary, autoscaler_chart
):
    """One node more than fits: per_node + 1 pods of one share each ask CA for 2 nodes of a
    shared pool (its binpacking of the zero-node template the tags describe), on the 1-GPU
    type the priority expander ranks first; the twin without the resource tag asks for 5 nodes
    for its 5 pods. Once the 4-share pool's nodes join, their plugin advertises 4 shares each
    (its rendered config) and its pods run two nodes' worth. The MIG pool's decision is CA's;
    its nodes' MIG instances (the GPU Operator's MIG manager) are not modelled here."""
    template = synth(SHARED_WITH_TWIN)
    world = build_world(template, aws_endpoint)
    world.edit_tags("twin", drop=(SHARES_TAG,))
    with autoscaled(cluster, scenario, template, world, autoscaler_binary, autoscaler_chart) as run:
        first = {}
        for pool, resource, per_node, _ in SHARE_CASES:
            names = [
                scenario.pod(
                    workload_pod(f"{pool}-{i}", 1, {POOL_LABEL: pool}, [GPU_TAINT], resource)
                )
                for i in range(per_node + 1)
            ]
            first[pool] = names
        for pool, _, _, nodes in SHARE_CASES:
            assert run.event(first[pool][0], "TriggeredScaleUp") == (
                f"pod triggered scale-up: [{_scaled(world, pool, nodes, 'g6.xlarge')}]"
                if pool in ("slices", "twin")
                else f"pod triggered scale-up: [{_scaled(world, pool, nodes)}]"
            ), pool

        def slices_running():
            pods = [cluster.core.read_namespaced_pod(n, "default") for n in first["slices"]]
            return (
                {p.spec.node_name for p in pods}
                if all(p.status.phase == "Running" for p in pods)
                else None
            )

        nodes = run.wait("the five 4-share pods running", slices_running)
        assert len(nodes) == 2
        assert {cluster.core.read_node(n).status.allocatable[GPU_RESOURCE] for n in nodes} == {"4"}


# The tags alone: an autoscaler that may not call eks:DescribeNodegroup (the stack's policy
# allows it; a user's own CA may not) builds the zero-node template from the ASG tags only.
TAG_TWINS = {
    "pools": {
        name: {"instance_types": ["g5.xlarge"], "max_size": 2}
        for name in ("tagged", "eks-spelling", "unlabelled", "undiscovered")
    }
}
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


def test_broken_tag_twins_scale_the_wrong_group_or_none_and_ca_says_why(
    cluster, scenario, aws_endpoint, autoscaler_binary, autoscaler_chart
):
    """Four copies of one pool, the zero-node template read from the ASG tags alone: the
    stack's tags scale their group for its GPU pod; the taint tag in EKS's API spelling
    (`true:NO_SCHEDULE`, which CA does not parse and drops) makes the group look untainted,
    so a CPU pod starts a GPU node there; without the pool's label tag the pool's GPU pod
    matches no template and CA says so; without the discovery tags CA never sees the group."""
    template = synth(TAG_TWINS)
    world = build_world(template, aws_endpoint, eks_api=False)
    world.edit_tags("eks-spelling", put={f"{TEMPLATE}/taint/nvidia.com/gpu": "true:NO_SCHEDULE"})
    world.edit_tags("unlabelled", drop=(f"{TEMPLATE}/label/{POOL_LABEL}",))
    world.edit_tags(
        "undiscovered",
        drop=("k8s.io/cluster-autoscaler/enabled", f"k8s.io/cluster-autoscaler/{world.cluster}"),
    )
    with autoscaled(
        cluster, scenario, template, world, autoscaler_binary, autoscaler_chart, nodes=False
    ) as run:
        pods = {
            pool: scenario.pod(workload_pod(f"gpu-for-{pool}", 1, {POOL_LABEL: pool}, [GPU_TAINT]))
            for pool in ("tagged", "unlabelled", "undiscovered")
        }
        cpu = scenario.pod(workload_pod("cpu-work", 0, {}, []))
        assert run.event(pods["tagged"], "TriggeredScaleUp") == (
            f"pod triggered scale-up: [{_scaled(world, 'tagged', 1)}]"
        )
        # The wrong group: a GPU node for a pod that asked for none.
        assert run.event(cpu, "TriggeredScaleUp") == (
            f"pod triggered scale-up: [{_scaled(world, 'eks-spelling', 1)}]"
        )
        unlabelled = run.event(pods["unlabelled"], "NotTriggerScaleUp")
        assert "node(s) didn't match Pod's node affinity/selector" in unlabelled
        undiscovered = run.event(pods["undiscovered"], "NotTriggerScaleUp")
        # Three groups judged (and refused) for it: the fourth is not CA's at all.
        assert "3 node(s) didn't match Pod's node affinity/selector" in undiscovered
        assert [_desired(world, p) for p in ("unlabelled", "undiscovered")] == [0, 0]
        # CA went on without the EKS API: its one complaint is the failed call.
        assert run.autoscaler.logged("Failed to get labels from EKS DescribeNodegroup API")
