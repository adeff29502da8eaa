"""A pool's GPU node on the real control plane: the device plugin's DaemonSet pod placed by the
real DaemonSet controller and scheduler, the GPUs advertised only once it runs, the smoke-test
pod bound to the GPU, and a CPU pod kept off. The seed's two classic failures, a plugin that
does not tolerate the pool's taint and nodes without the plugin's selector label, are run as
broken twins of the default app and must leave the GPU pod Pending."""

from __future__ import annotations

import copy

import pytest

from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.nodes import GPU_RESOURCE, gpu_count
from tests.e2e.harness.pools import device_plugin, pool_node, smoke_test_pod
from tests.e2e.harness.scenario import (
    Scenario,
    daemon_set_settled,
    plugin_pods_on,
    scheduling_failure,
)
from tests.e2e.harness.stack_objects import Release

pytestmark = pytest.mark.e2e

# The smoke pod ran: our kwok Stage completes it half a second after it runs.
RAN = ("Running", "Succeeded")

NODE = "ip-10-0-1-5.ec2.internal"
POOL = "gpu"
# The plugin release's DaemonSet (the chart names it after the release).
PLUGIN_DAEMON_SET = "nvidia-device-plugin-gpu"


def test_the_pools_node_runs_its_device_plugin_and_the_smoke_pod_gets_a_gpu(
    cluster, scenario, default_template
):
    """The default app: the plugin's DaemonSet pod lands on the pool's node (it tolerates the
    pool's taint and selects its label), the node then advertises the instance type's GPUs,
    and the smoke-test pod binds to it and runs."""
    scenario.install(device_plugin(default_template))
    node = scenario.node(pool_node(default_template, POOL, NODE))

    (plugin,) = cluster.wait_for(
        "the device plugin pod Running on the pool's node",
        lambda: [p for p in plugin_pods_on(cluster, node) if p.status.phase == "Running"],
    )
    assert plugin.metadata.namespace == "kube-system"
    gpus = cluster.wait_for(
        "the node's allocatable nvidia.com/gpu",
        lambda: (cluster.core.read_node(node).status.allocatable or {}).get(GPU_RESOURCE),
    )
    assert gpus == str(gpu_count("g5.xlarge")) == "1"

    name = scenario.pod(smoke_test_pod(None, POOL))
    running = cluster.wait_for(
        "the smoke-test pod running (or done)",
        lambda: (p := cluster.core.read_namespaced_pod(name, "default")).status.phase in RAN and p,
    )
    assert running.spec.node_name == node


def test_a_cpu_pod_that_tolerates_no_gpu_taint_is_never_scheduled_on_a_gpu_node(
    cluster, scenario, default_template
):
    """The pool's taint keeps ordinary pods off its (expensive) nodes: with only a GPU node in
    the cluster, the scheduler leaves the CPU pod Pending and says a taint is why (1.36's message
    does not name it)."""
    scenario.install(device_plugin(default_template))
    scenario.node(pool_node(default_template, POOL, NODE))
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
    message = scheduling_failure(cluster, name, "untolerated taint")
    assert message.startswith("0/1 nodes are available: 1 node(s) had untolerated taint(s).")
    assert cluster.core.read_namespaced_pod(name, "default").spec.node_name is None


def _assert_gpu_pod_stays_pending(cluster: Cluster, scenario: Scenario, node: str) -> str:
    # The DaemonSet controller's decision, once it has seen the node: no pod for it.
    assert daemon_set_settled(cluster, PLUGIN_DAEMON_SET).desired_number_scheduled == 0
    name = scenario.pod(smoke_test_pod(None, POOL))
    message = scheduling_failure(cluster, name, "Insufficient nvidia.com/gpu")
    assert message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert plugin_pods_on(cluster, node) == []
    assert GPU_RESOURCE not in (cluster.core.read_node(node).status.allocatable or {})
    return message


def test_broken_twin_a_plugin_without_the_pools_toleration_leaves_gpu_pods_pending(
    cluster, scenario, default_template
):
    """The seed's first failure, for real: the plugin's DaemonSet does not tolerate the pool's
    `nvidia.com/gpu` taint, so the DaemonSet controller never places it on the node, the node
    never advertises a GPU and the smoke pod stays Pending."""
    plugin = device_plugin(default_template)
    values = copy.deepcopy(plugin.values)
    values["tolerations"] = [t for t in values["tolerations"] if t["key"] != "nvidia.com/gpu"]
    scenario.install(Release(**{**plugin.__dict__, "values": values}))
    node = scenario.node(pool_node(default_template, POOL, NODE))
    _assert_gpu_pod_stays_pending(cluster, scenario, node)


def test_broken_twin_nodes_without_the_plugins_selector_label_get_no_plugin(
    cluster, scenario, default_template
):
    """The second: the pool's nodes lack the label the plugin selects (`gpu-pool.io/pool`), so
    no plugin pod is placed there and the GPU pod stays Pending."""
    scenario.install(device_plugin(default_template))
    node_template = pool_node(default_template, POOL, NODE)
    del node_template["metadata"]["labels"]["gpu-pool.io/pool"]
    node = scenario.node(node_template)
    name = scenario.pod(
        {
            **smoke_test_pod(None, POOL),
            "spec": {**smoke_test_pod(None, POOL)["spec"], "nodeSelector": {}},
        }
    )
    message = scheduling_failure(cluster, name, "Insufficient nvidia.com/gpu")
    assert message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
    assert plugin_pods_on(cluster, node) == []
