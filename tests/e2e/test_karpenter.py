"""The real Karpenter 1.15.0 controller launches the stack's Karpenter pools' GPU nodes: it
reads the stack's NodePool and EC2NodeClass (Karpenter's own CRDs from its module), launches
through moto's EC2 (CreateFleet) with the environment the stack's chart renders, and its
NodeClaims become Nodes the real scheduler places the pods on. Each scenario asserts what the
controller did: its NodeClaims, the instance it launched, the node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.harness.karpenter import NODECLAIMS, karpenter_running, karpenter_world
from tests.e2e.harness.nodes import GPU_RESOURCE
from tests.e2e.harness.pools import POOL_LABEL, smoke_test_pod
from tests.e2e.harness.scenario import plugin_pods_on
from tests.e2e.verdicts import with_crds
from tests.support.cfn import synth

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
        karpenter.wait(
            "the device plugin Running on it",
            lambda: [p for p in plugin_pods_on(cluster, node) if p.status.phase == "Running"],
        )
        ran = karpenter.wait(
            "the smoke pod run on the node",
            lambda: (
                (p := cluster.core.read_namespaced_pod(name, "default")).status.phase in RAN and p
            ),
        )
        assert ran.spec.node_name == node
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
