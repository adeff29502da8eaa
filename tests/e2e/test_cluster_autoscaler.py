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
from tests.e2e.harness.pools import smoke_test_pod
from tests.e2e.harness.scenario import plugin_pods_on

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
        run.wait(
            "the device plugin Running on it",
            lambda: [p for p in plugin_pods_on(cluster, node) if p.status.phase == "Running"],
        )
        ran = run.wait(
            "the smoke pod run on the new node",
            lambda: (
                (p := cluster.core.read_namespaced_pod(name, "default")).status.phase in RAN and p
            ),
        )
        assert ran.spec.node_name == node
        # CA learns the instance's group at its next ASG refresh (harness/autoscaler.py).
        run.autoscaler.restart()
        cluster.core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
        run.wait("the group back at 0", lambda: _desired(world, "gpu") == 0, timeout=90)
        run.wait("the node gone", lambda: node in run.nodes.removed)
        assert run.autoscaler.logged(f'Scale-down: removing empty node "{node}"')
        # Every AWS call went to moto: none to AWS's own endpoints.
        assert not run.autoscaler.logged("amazonaws.com")
