"""What one e2e test puts in the cluster (charts, nodes, pods, claim templates), removed after
it, and what the scheduler and the controllers say about it."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from kubernetes.client.exceptions import ApiException

from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.nodes import DEVICE_PLUGIN_IMAGE
from tests.e2e.harness.stack_objects import Release, chart_directory


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
        """Removes what the test made, every step tried whatever the others did (an object
        already gone is fine), then fails with what could not be removed."""
        core, resource, errors = self.cluster.core, self.cluster.resource, []

        def attempt(step: Callable[..., object], *args: object, **kwargs: object) -> None:
            try:
                step(*args, **kwargs)
            except ApiException as gone:
                if gone.status != 404:
                    errors.append(gone)
            except Exception as error:
                errors.append(error)

        for namespace, name in self.pods:
            attempt(core.delete_namespaced_pod, name, namespace, grace_period_seconds=0)
        for name in self.claim_templates:
            attempt(resource.delete_namespaced_resource_claim_template, name, "default")
        for release in self.releases:
            attempt(self.cluster.uninstall_chart, release.release, release.namespace)
        # As a node leaves: its pods deleted (forced: no kubelet here to confirm), then the
        # node. The next test starts from an empty cluster: a plugin pod or a ResourceSlice
        # still bound to this node name would serve the next node of that name.
        for name in self.nodes:
            on_node = f"spec.nodeName={name}"
            for pod in core.list_pod_for_all_namespaces(field_selector=on_node).items:
                attempt(
                    core.delete_namespaced_pod,
                    pod.metadata.name,
                    pod.metadata.namespace,
                    grace_period_seconds=0,
                )
            attempt(core.delete_node, name)
            attempt(resource.delete_collection_resource_slice, field_selector=on_node)
            attempt(
                self.cluster.wait_for,
                f"node {name}, its pods and ResourceSlices gone",
                partial(self._node_gone, name),
            )
        if errors:
            raise AssertionError(f"e2e: cleanup failed: {errors}")

    def _node_gone(self, name: str) -> bool:
        """True once nothing of node `name` is left: the node, its pods, its slices."""
        on_node = f"spec.nodeName={name}"
        return (
            not self.cluster.core.list_node(field_selector=f"metadata.name={name}").items
            and not self.cluster.core.list_pod_for_all_namespaces(field_selector=on_node).items
            and not self.cluster.resource.list_resource_slice(field_selector=on_node).items
        )


def plugin_pods_on(cluster: Cluster, node: str) -> list[Any]:
    pods = cluster.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
    return [
        p
        for p in pods.items
        if any(c.image.startswith(DEVICE_PLUGIN_IMAGE) for c in p.spec.containers)
    ]


def scheduling_failure(cluster: Cluster, pod: str, saying: str) -> str:
    """Waits for the scheduler's FailedScheduling event of `pod` whose message says `saying`."""

    def event() -> str | None:
        events = cluster.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={pod},reason=FailedScheduling"
        )
        return next((e.message for e in events.items if saying in e.message), None)

    return cluster.wait_for(f"FailedScheduling of {pod} saying {saying!r}", event)


def daemon_set_settled(cluster: Cluster, name: str, namespace: str = "kube-system") -> Any:
    """The DaemonSet's status once its controller has seen its current spec and every pod it
    placed is ready: what it decided, not a moment of its work."""

    def settled() -> Any:
        found = cluster.apps.read_namespaced_daemon_set(name, namespace)
        status = found.status
        if status.observed_generation != found.metadata.generation:
            return None
        return status if (status.number_ready or 0) == status.desired_number_scheduled else None

    return cluster.wait_for(f"DaemonSet {namespace}/{name} settled", settled)


def ran_on(cluster: Cluster, wait: Callable[..., Any], pod: str, node: str) -> None:
    """The device plugin Running on `node`, then `pod` run there (or done: our kwok Stage
    completes the smoke pod), waited for with `wait` (a harness's, which names its component's
    log when it times out)."""
    wait(
        "the device plugin Running on the node",
        lambda: [p for p in plugin_pods_on(cluster, node) if p.status.phase == "Running"],
    )
    ran = wait(
        f"{pod} run on the node",
        lambda: (
            (p := cluster.core.read_namespaced_pod(pod, "default")).status.phase
            in ("Running", "Succeeded")
            and p
        ),
    )
    assert ran.spec.node_name == node
