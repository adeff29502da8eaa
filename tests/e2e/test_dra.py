"""DRA for real: the NVIDIA DRA driver's chart (0.4.1) installed with a DRA pool's values, its
kubelet plugin placed on the pool's node by the DaemonSet controller, the node's GPUs published
as that driver publishes them (tests/e2e/harness/nodes.py gpu_resource_slice), and the smoke
test's ResourceClaimTemplate and pod (`gpu-pool smoke-test-manifest`) accepted by
resource.k8s.io/v1: kube-controller-manager's resourceclaim controller makes the pod's claim and
the scheduler allocates it a GPU and binds the pod. An EFA DRA pool's claim takes a GPU and an
EFA interface of the EFA DRA driver (aws-dranet 1.0.0) under one PCIe root; with the roots
published apart, the same claim stays unallocated (seen once, with the EFA roots offset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.nodes import (
    DRA_DRIVER_IMAGE,
    DRA_GPU_DRIVER,
    EFA_DRA_DRIVER,
    node_group_node,
)
from tests.e2e.harness.pools import node_group, smoke_test_objects
from tests.e2e.harness.scenario import Scenario, scheduling_failure
from tests.e2e.harness.stack_objects import releases
from tests.support.cfn import synth
from tests.support.settings import DRA, EFA_DRA

pytestmark = pytest.mark.e2e

# The smoke pod ran: our kwok Stage completes it half a second after it runs.
RAN = ("Running", "Succeeded")

NODE = "ip-10-0-2-7.ec2.internal"


def _settings_file(tmp_path: Path) -> Path:
    settings = tmp_path / "dra.json"
    settings.write_text(json.dumps(DRA))
    return settings


def _dra_node(cluster: Cluster, scenario: Scenario) -> str:
    template = synth(DRA)
    (driver,) = [r for r in releases(template) if r.chart == "dra-driver-nvidia-gpu"]
    scenario.install(driver)
    logical_id, properties = node_group(template, "dra")
    node = scenario.node(node_group_node(NODE, properties, nodegroup_name=logical_id))
    cluster.wait_for(
        "the driver's kubelet plugin Running on the DRA pool's node",
        lambda: [
            p
            for p in cluster.core.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={node},status.phase=Running"
            ).items
            if any(c.image.startswith(DRA_DRIVER_IMAGE) for c in p.spec.containers)
        ],
    )
    cluster.wait_for(
        "the node's ResourceSlice",
        lambda: cluster.resource.list_resource_slice(field_selector=f"spec.nodeName={node}").items,
    )
    return node


def _create(cluster: Cluster, scenario: Scenario, objects: list[dict[str, Any]]) -> str:
    for manifest in objects:
        if manifest["kind"] == "ResourceClaimTemplate":
            cluster.resource.create_namespaced_resource_claim_template("default", manifest)
            scenario.claim_templates.append(manifest["metadata"]["name"])
    (pod,) = [o for o in objects if o["kind"] == "Pod"]
    return scenario.pod(pod)


def test_the_scheduler_allocates_the_smoke_tests_claim_a_gpu_of_the_pools_node(
    cluster, scenario, tmp_path
):
    node = _dra_node(cluster, scenario)
    pod = _create(cluster, scenario, smoke_test_objects(_settings_file(tmp_path), "dra"))
    running = cluster.wait_for(
        "the smoke pod running (or done)",
        lambda: (p := cluster.core.read_namespaced_pod(pod, "default")).status.phase in RAN and p,
    )
    assert running.spec.node_name == node
    (status,) = running.status.resource_claim_statuses
    claim = cluster.resource.read_namespaced_resource_claim(status.resource_claim_name, "default")
    (result,) = claim.status.allocation.devices.results
    assert (result.driver, result.pool, result.device, result.request) == (
        DRA_GPU_DRIVER,
        node,
        "gpu-0",
        "gpu",
    )


def test_a_claim_for_more_gpus_than_the_node_has_is_not_allocated(cluster, scenario, tmp_path):
    """The same claim for two GPUs on a one-GPU g6e.xlarge: the scheduler says it cannot
    allocate it, and the pod stays Pending."""
    _dra_node(cluster, scenario)
    objects = smoke_test_objects(_settings_file(tmp_path), "dra")
    for manifest in objects:
        if manifest["kind"] == "ResourceClaimTemplate":
            manifest["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    pod = _create(cluster, scenario, objects)
    message = scheduling_failure(cluster, pod, "cannot allocate all claims")
    assert "0/1 nodes are available: 1 cannot allocate all claims." in message


def test_the_gpu_and_efa_of_an_efa_dra_pools_claim_share_a_pcie_root(cluster, scenario, tmp_path):
    """An EFA DRA pool (p5.48xlarge): both drivers' charts installed with the pool's values,
    both kubelet plugins placed on its node, and the smoke test's one claim for a GPU and an
    EFA interface under `matchAttribute: resource.kubernetes.io/pcieRoot` allocated by the
    real scheduler to two devices under one root."""
    template = synth(EFA_DRA)
    for release in releases(template):
        if release.chart in ("dra-driver-nvidia-gpu", "aws-dranet"):
            scenario.install(release)
    logical_id, properties = node_group(template, "dra")
    node = scenario.node(node_group_node(NODE, properties, nodegroup_name=logical_id))
    cluster.wait_for(
        "both drivers' ResourceSlices",
        lambda: (
            len(cluster.resource.list_resource_slice(field_selector=f"spec.nodeName={node}").items)
            == 2
        ),
    )
    settings = tmp_path / "efa-dra.json"
    settings.write_text(json.dumps(EFA_DRA))
    pod = _create(cluster, scenario, smoke_test_objects(settings, "dra"))
    running = cluster.wait_for(
        "the smoke pod running (or done)",
        lambda: (p := cluster.core.read_namespaced_pod(pod, "default")).status.phase in RAN and p,
    )
    (status,) = running.status.resource_claim_statuses
    claim = cluster.resource.read_namespaced_resource_claim(status.resource_claim_name, "default")
    allocated = {r.request: (r.driver, r.device) for r in claim.status.allocation.devices.results}
    assert {request: driver for request, (driver, _) in allocated.items()} == {
        "gpu": DRA_GPU_DRIVER,
        "efa": EFA_DRA_DRIVER,
    }
    roots = {
        (s.spec.driver, d.name): d.attributes["resource.kubernetes.io/pcieRoot"].string
        for s in cluster.resource.list_resource_slice(field_selector=f"spec.nodeName={node}").items
        for d in s.spec.devices
    }
    assert roots[allocated["gpu"]] == roots[allocated["efa"]]
