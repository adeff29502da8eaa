"""How long the real Cluster Autoscaler takes, with the arguments the stack deploys it with
(harness/autoscaler.py `as_deployed`: the chart's flags, the 10 s scan, the 30 s hold on new GPU
pods, the stack's 5-minute scale-down times and CA's 1-minute ASG refresh all kept): from a
pending GPU pod to CA's scale-up decision (its TriggeredScaleUp event), to the pod running on
the new node, and from the pod's deletion to the node's removal. For `./dev bench`
(tools/benchmark.py), never a pass/fail test: `python -m tests.e2e.harness.latency` prints the
figures as JSON. It starts its own control plane and moto, and takes 7 minutes or so.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from moto.server import ThreadedMotoServer

from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION
from tests.e2e.harness.autoscaler import autoscaled
from tests.e2e.harness.autoscaler_build import autoscaler_version, build_autoscaler, source_tree
from tests.e2e.harness.aws_world import build_world
from tests.e2e.harness.build import build
from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.layer import layer_binaries
from tests.e2e.harness.pools import smoke_test_pod
from tests.e2e.harness.processes import free_port
from tests.e2e.harness.scenario import Scenario
from tests.support.cfn import synth

RAN = ("Running", "Succeeded")


def measure(work: Path) -> dict[str, float]:
    """Seconds from the pod's creation to CA's decision and to the pod running, and from its
    deletion to the node's removal, on the default app's pool."""
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    plane = ControlPlane(build(), work / "control-plane").start()
    kubectl, helm = layer_binaries(DEFAULT_KUBERNETES_VERSION, work / "layer")
    chart = source_tree(autoscaler_version())[0] / "charts" / "cluster-autoscaler"
    template = synth({})
    try:
        (work / "work").mkdir()
        with Cluster(plane, kubectl, helm, work / "work") as cluster:
            scenario = Scenario(cluster)
            world = build_world(template, f"http://127.0.0.1:{port}")
            try:
                with autoscaled(
                    cluster,
                    scenario,
                    template,
                    world,
                    build_autoscaler(),
                    chart,
                    as_deployed=True,
                ) as run:
                    created = time.monotonic()
                    name = scenario.pod(smoke_test_pod(None, "gpu"))
                    run.event(name, "TriggeredScaleUp", timeout=120)
                    decided = time.monotonic()
                    run.wait(
                        "the pod running",
                        lambda: (
                            cluster.core.read_namespaced_pod(name, "default").status.phase in RAN
                        ),
                        timeout=120,
                    )
                    running = time.monotonic()
                    (node,) = run.nodes.registered
                    cluster.core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
                    deleted = time.monotonic()
                    run.wait("the node removed", lambda: node in run.nodes.removed, timeout=900)
                    removed = run.nodes.removed[node]
            finally:
                scenario.cleanup()
    finally:
        plane.stop()
        moto.stop()
    return {
        "decision_s": decided - created,
        "running_s": running - created,
        "idle_before_removal_s": removed - deleted,
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gpu-pool-latency-") as directory:
        print(json.dumps(measure(Path(directory))))


if __name__ == "__main__":
    main()
