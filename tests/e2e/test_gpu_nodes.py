"""A pool's GPU node on the real control plane: the device plugin's DaemonSet pod placed by the
real DaemonSet controller and scheduler, the GPUs advertised only once it runs, the smoke-test
pod bound to the GPU, and a CPU pod kept off. The seed's two classic failures, a plugin that
does not tolerate the pool's taint and nodes without the plugin's selector label, are run as
broken twins of the default app and must leave the GPU pod Pending."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.nodes import DEVICE_PLUGIN_IMAGE, GPU_RESOURCE, gpu_count, node_group_node
from tests.e2e.harness.pools import node_group, smoke_test_pod
from tests.e2e.harness.stack_objects import Release, chart_directory, releases

pytestmark = pytest.mark.e2e

NODE = "ip-10-0-1-5.ec2.internal"
POOL = "gpu"


def _device_plugin(template: Any) -> Release:
    (plugin,) = [r for r in releases(template) if r.chart == "nvidia-device-plugin"]
    return plugin


class Scenario:
    """Charts installed and nodes and pods created by one test, all removed after it."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.releases: list[Release] = []
        self.nodes: list[str] = []
        self.pods: list[tuple[str, str]] = []
        self.claim_templates: list[str] = []

    def install(self, release: Release) -> None:
        chart = chart_directory(release, None)
        assert chart is not None, release.chart
        self.cluster.install_chart(release.release, chart, release.namespace, release.values)
        self.releases.append(release)

    def node(self, manifest: dict[str, Any]) -> str:
        """Registers the node and waits until it has joined: Ready, and without the
        `node.kubernetes.io/not-ready` taint the node lifecycle controller gives a new node."""
        name = str(manifest["metadata"]["name"])
        self.cluster.core.create_node(manifest)
        self.nodes.append(name)

        def joined() -> bool:
            node = self.cluster.core.read_node(name)
            ready = any(
                c.type == "Ready" and c.status == "True" for c in node.status.conditions or []
            )
            lifecycle = [
                t for t in node.spec.taints or [] if t.key.startswith("node.kubernetes.io/")
            ]
            return ready and not lifecycle

        self.cluster.wait_for(f"node {name} Ready", joined)
        return name

    def pod(self, manifest: dict[str, Any], namespace: str = "default") -> str:
        self.cluster.core.create_namespaced_pod(namespace, manifest)
        self.pods.append((namespace, manifest["metadata"]["name"]))
        return str(manifest["metadata"]["name"])

    def cleanup(self) -> None:
        for namespace, name in self.pods:
            self.cluster.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        for name in self.claim_templates:
            self.cluster.resource.delete_namespaced_resource_claim_template(name, "default")
        for release in self.releases:
            self.cluster.uninstall_chart(release.release, release.namespace)
        for name in self.nodes:
            self.cluster.core.delete_node(name)


@pytest.fixture
def scenario(cluster: Cluster) -> Iterator[Scenario]:
    running = Scenario(cluster)
    try:
        yield running
    finally:
        running.cleanup()


def _pool_node(template: Any, name: str = NODE, **changes: Any) -> dict[str, Any]:
    logical_id, properties = node_group(template, POOL)
    return node_group_node(name, {**properties, **changes}, nodegroup_name=logical_id)


def _plugin_pods_on(cluster: Cluster, node: str) -> list[Any]:
    pods = cluster.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
    return [
        p
        for p in pods.items
        if any(c.image.startswith(DEVICE_PLUGIN_IMAGE) for c in p.spec.containers)
    ]


def _scheduling_failure(cluster: Cluster, pod: str, saying: str) -> str:
    """Waits for the scheduler's FailedScheduling event of `pod` whose message says `saying`."""

    def event() -> str | None:
        events = cluster.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={pod},reason=FailedScheduling"
        )
        return next((e.message for e in events.items if saying in e.message), None)

    return cluster.wait_for(f"FailedScheduling of {pod} saying {saying!r}", event)


def test_the_pools_node_runs_its_device_plugin_and_the_smoke_pod_gets_a_gpu(
    cluster, scenario, default_template
):
    """The default app: the plugin's DaemonSet pod lands on the pool's node (it tolerates the
    pool's taint and selects its label), the node then advertises the instance type's GPUs,
    and the smoke-test pod binds to it and runs."""
    scenario.install(_device_plugin(default_template))
    node = scenario.node(_pool_node(default_template))

    (plugin,) = cluster.wait_for(
        "the device plugin pod Running on the pool's node",
        lambda: [p for p in _plugin_pods_on(cluster, node) if p.status.phase == "Running"],
    )
    assert plugin.metadata.namespace == "kube-system"
    gpus = cluster.wait_for(
        "the node's allocatable nvidia.com/gpu",
        lambda: (cluster.core.read_node(node).status.allocatable or {}).get(GPU_RESOURCE),
    )
    assert gpus == str(gpu_count("g5.xlarge")) == "1"

    name = scenario.pod(smoke_test_pod(None, POOL))
    running = cluster.wait_for(
        "the smoke-test pod Running",
        lambda: (
            (p := cluster.core.read_namespaced_pod(name, "default")).status.phase == "Running" and p
        ),
    )
    assert running.spec.node_name == node


def test_a_cpu_pod_that_tolerates_no_gpu_taint_is_never_scheduled_on_a_gpu_node(
    cluster, scenario, default_template
):
    """The pool's taint keeps ordinary pods off its (expensive) nodes: with only a GPU node in
    the cluster, the scheduler leaves the CPU pod Pending and says a taint is why (1.36's message
    does not name it)."""
    scenario.install(_device_plugin(default_template))
    scenario.node(_pool_node(default_template))
    name = scenario.pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "cpu-work"},
            "spec": {
                "containers": [
                    {"name": "app", "image": "public.ecr.aws/docker/library/busybox:1.37"}
                ]
            },
        }
    )
    message = _scheduling_failure(cluster, name, "untolerated taint")
    assert message.startswith("0/1 nodes are available: 1 node(s) had untolerated taint(s).")
    assert cluster.core.read_namespaced_pod(name, "default").spec.node_name is None


def _assert_gpu_pod_stays_pending(cluster: Cluster, scenario: Scenario, node: str) -> str:
    name = scenario.pod(smoke_test_pod(None, POOL))
    message = _scheduling_failure(cluster, name, "Insufficient nvidia.com/gpu")
    assert message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert _plugin_pods_on(cluster, node) == []
    assert GPU_RESOURCE not in (cluster.core.read_node(node).status.allocatable or {})
    return message


def test_broken_twin_a_plugin_without_the_pools_toleration_leaves_gpu_pods_pending(
    cluster, scenario, default_template
):
    """The seed's first failure, for real: the plugin's DaemonSet does not tolerate the pool's
    `nvidia.com/gpu` taint, so the DaemonSet controller never places it on the node, the node
    never advertises a GPU and the smoke pod stays Pending."""
    plugin = _device_plugin(default_template)
    values = copy.deepcopy(plugin.values)
    values["tolerations"] = [t for t in values["tolerations"] if t["key"] != "nvidia.com/gpu"]
    scenario.install(Release(**{**plugin.__dict__, "values": values}))
    node = scenario.node(_pool_node(default_template))
    _assert_gpu_pod_stays_pending(cluster, scenario, node)


def test_broken_twin_nodes_without_the_plugins_selector_label_get_no_plugin(
    cluster, scenario, default_template
):
    """The second: the pool's nodes lack the label the plugin selects (`gpu-pool.io/pool`), so
    no plugin pod is placed there and the GPU pod stays Pending."""
    scenario.install(_device_plugin(default_template))
    node_template = _pool_node(default_template)
    del node_template["metadata"]["labels"]["gpu-pool.io/pool"]
    node = scenario.node(node_template)
    name = scenario.pod(
        {
            **smoke_test_pod(None, POOL),
            "spec": {**smoke_test_pod(None, POOL)["spec"], "nodeSelector": {}},
        }
    )
    message = _scheduling_failure(cluster, name, "Insufficient nvidia.com/gpu")
    assert message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert _plugin_pods_on(cluster, node) == []
