"""A scripted Kubernetes API server on 127.0.0.1 for the verify and doctor tests.

Responses are shaped like the real API's (kind, apiVersion, metadata, spec, status), so the
official client deserializes them as it would a cluster's. A scenario is a timeline keyed by
`tick`, the number of times the smoke-test pod has been read: at each tick it says what the
pod, its events, the pool's nodes, the device plugin and the autoscaler look like.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

POOL_LABELS = {
    "accelerator": "nvidia",
    "workload": "inference",
    "gpu-pool.io/pool": "gpu",
    "nvidia.com/gpu.present": "true",
    "k8s.amazonaws.com/accelerator": "nvidia-a10g",
    "nvidia.com/gpu.deploy.operands": "false",
}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
NVIDIA_SMI = (
    "| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: 13.0 |\n| 0 NVIDIA A10G |"
)


def node(
    name="ip-10-0-1-5.ec2.internal",
    ready=True,
    gpus=1,
    conditions=None,
    pool="gpu",
    instance_type=None,
) -> dict:
    labels = {**POOL_LABELS, "gpu-pool.io/pool": pool}
    if instance_type:
        labels["node.kubernetes.io/instance-type"] = instance_type
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": [GPU_TAINT]},
        "status": {
            "conditions": conditions
            or [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "message": "kubelet is posting ready status"
                    if ready
                    else "container runtime network not ready",
                }
            ],
            "allocatable": {"cpu": "4", "nvidia.com/gpu": str(gpus)},
        },
    }


def daemon_set(node_selector=None, tolerations=None, desired=1, ready=1, pool="gpu") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": f"nvidia-device-plugin-{pool}",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/name": "nvidia-device-plugin"},
        },
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "spec": {
                    "containers": [{"name": "nvidia-device-plugin-ctr"}],
                    "nodeSelector": {"gpu-pool.io/pool": pool}
                    if node_selector is None
                    else node_selector,
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    ]
                    if tolerations is None
                    else tolerations,
                }
            },
        },
        "status": {
            "currentNumberScheduled": desired,
            "desiredNumberScheduled": desired,
            "numberMisscheduled": 0,
            "numberReady": ready,
        },
    }


def autoscaler(cluster="gpu-pool", ready=1) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cluster-autoscaler", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "ca"}},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "aws-cluster-autoscaler",
                            "command": [
                                "./cluster-autoscaler",
                                "--cloud-provider=aws",
                                "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
                                f"k8s.io/cluster-autoscaler/{cluster}",
                            ],
                        }
                    ]
                }
            },
        },
        "status": {"readyReplicas": ready},
    }


def karpenter_controller(ready=1, queue="gpu-pool-interruption") -> dict:
    env = [{"name": "CLUSTER_NAME", "value": "gpu-pool"}]
    if queue:
        env.append({"name": "INTERRUPTION_QUEUE", "value": queue})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "karpenter", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "karpenter"}},
            "template": {"spec": {"containers": [{"name": "controller", "env": env}]}},
        },
        "status": {"readyReplicas": ready},
    }


def condition(type_, status="True", reason=None, message=""):
    """A status condition; reason defaults to the type, and "" leaves reason or message out
    (both are optional in the API)."""
    found = {"type": type_, "status": status, "lastTransitionTime": "2026-12-02T10:00:00Z"}
    reason = type_ if reason is None else reason
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


_KINDS_BY_PLURAL = {
    "nodepools": "NodePool",
    "ec2nodeclasses": "EC2NodeClass",
    "nodeclasses": "NodeClass",  # EKS Auto Mode's
}
_API_VERSIONS = {
    "NodePool": "karpenter.sh/v1",
    "EC2NodeClass": "karpenter.k8s.aws/v1",
    "NodeClass": "eks.amazonaws.com/v1",
}


def karpenter_object(kind, name, *conditions) -> dict:
    group = _API_VERSIONS[kind]
    return {
        "apiVersion": group,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {},
        "status": {"conditions": list(conditions) or [condition("Ready")]},
    }


def node_claim(name="gpu-pool-gpu-x7k2p", pool="gpu", *conditions, instance_type="g5.xlarge"):
    labels = {"karpenter.sh/nodepool": f"gpu-pool-{pool}"}
    if instance_type:
        labels["node.kubernetes.io/instance-type"] = instance_type
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"conditions": list(conditions)},
    }


SCALE_UP = (
    "TriggeredScaleUp",
    "pod triggered scale-up: [{eks-GpuPoolG5Xlarge-4ac9 0->1 (max: 8)}]",
)


_NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "NotFound",
    "code": 404,
}


def _selects(selector: str, labels: dict[str, str]) -> bool:
    """An equality-based label selector (`k=v,k2=v2`), as the API server applies it."""
    terms = [term.split("=", 1) for term in selector.split(",") if term]
    return all(labels.get(key) == value for key, value in terms)


@dataclass
class Scenario:
    """What the cluster shows at each tick; `None` for an absent object."""

    events: list[tuple[int, tuple[str, str]]] = field(default_factory=list)  # (from tick, event)
    nodes: list[tuple[int, dict]] = field(default_factory=list)  # (from tick, node); last wins
    # Nodes there all along (listed before the scripted one), e.g. the pool's older nodes.
    standing_nodes: list[dict] = field(default_factory=list)
    scheduled_at: int | None = None
    succeeded_at: int | None = None
    failed_at: int | None = None
    daemon_sets: list[dict] = field(default_factory=lambda: [daemon_set()])
    autoscaler: dict | None = field(default_factory=autoscaler)
    log: str | bytes = NVIDIA_SMI
    # Karpenter: its controller, the NodePools and EC2NodeClasses by name, and NodeClaims
    # (from tick, claim; a later entry of the same name replaces it, and one marked
    # {"gone": True} deletes it).
    karpenter: dict | None = None
    karpenter_objects: list[dict] = field(default_factory=list)
    node_claims: list[tuple[int, dict]] = field(default_factory=list)
    # Pods other than the smoke test's (e.g. metrics exporters), each with its namespace.
    pods: list[dict] = field(default_factory=list)


class FakeKubernetes:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.tick = 0
        self.created: list[dict] = []
        self.deleted: list[str] = []
        # The query of each DELETE (the grace period travels there).
        self.delete_queries: list[dict[str, list[str]]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # A short poll interval: shutdown() waits up to one interval (0.5 s by default).
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeKubernetes:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def kubeconfig(self, directory: Path) -> Path:
        path = directory / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "fake",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "fake", "user": {}}],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                }
            )
        )
        return path

    # -- the API -----------------------------------------------------------------------------

    def respond(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        s = self.scenario
        if path.rstrip("/") == "/version":
            return 200, {
                "major": "1",
                "minor": "35",
                "gitVersion": "v1.35.2-eks-3cfe0ce",
                "gitCommit": "3cfe0ce",
                "gitTreeState": "clean",
                "buildDate": "2026-10-15T10:00:00Z",
                "goVersion": "go1.25.3",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        if method == "POST" and (m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path)):
            self.created.append(body)
            return 201, {**body, "metadata": {**body["metadata"], "namespace": m.group(1)}}
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path):
            selector = query.get("labelSelector", [""])[0]
            items = [
                p
                for p in s.pods
                if p["metadata"]["namespace"] == m.group(1)
                and _selects(selector, p["metadata"].get("labels", {}))
            ]
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)(/log)?", path):
            namespace, name, log = m.groups()
            if method == "DELETE":
                self.deleted.append(name)
                self.delete_queries.append(query)
                return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
            if log:
                return 200, s.log
            self.tick += 1
            return 200, self._pod(namespace, name)
        if re.fullmatch(r"/api/v1/namespaces/[^/]+/events", path):
            # The scripted events are the smoke-test pod's: other selectors see none.
            name = query.get("fieldSelector", [""])[0].removeprefix("involvedObject.name=")
            pods = {p["metadata"]["name"] for p in self.created}
            items = [
                self._event(name, i, e)
                for i, (t, e) in enumerate(s.events)
                if self.tick >= t and name in pods
            ]
            return 200, {"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": items}
        if path == "/api/v1/nodes":
            current = s.standing_nodes + [n for t, n in s.nodes if self.tick >= t][-1:]
            selector = query.get("labelSelector", [""])[0]
            items = [n for n in current if _selects(selector, n["metadata"]["labels"])]
            return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items}
        if path == "/apis/apps/v1/namespaces/kube-system/daemonsets":
            selector = query.get("labelSelector", [""])[0]
            return 200, {
                "kind": "DaemonSetList",
                "apiVersion": "apps/v1",
                "metadata": {},
                "items": [d for d in s.daemon_sets if _selects(selector, d["metadata"]["labels"])],
            }
        if m := re.fullmatch(r"/apis/apps/v1/namespaces/kube-system/deployments/([^/]+)", path):
            deployment = {"cluster-autoscaler": s.autoscaler, "karpenter": s.karpenter}.get(
                m.group(1)
            )
            return (404, _NOT_FOUND) if deployment is None else (200, deployment)
        if path == "/apis/karpenter.sh/v1/nodeclaims":
            claims: dict[str, dict] = {}
            for t, claim in s.node_claims:
                if self.tick >= t:
                    claims[claim["metadata"]["name"]] = claim
                    if claim.get("gone"):
                        del claims[claim["metadata"]["name"]]
            selector = query.get("labelSelector", [""])[0]
            items = [c for c in claims.values() if _selects(selector, c["metadata"]["labels"])]
            return 200, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaimList", "items": items}
        if m := re.fullmatch(
            r"/apis/(karpenter\.sh|karpenter\.k8s\.aws|eks\.amazonaws\.com)/v1/"
            r"(nodepools|ec2nodeclasses|nodeclasses)/([^/]+)",
            path,
        ):
            kind = _KINDS_BY_PLURAL[m.group(2)]
            for obj in s.karpenter_objects:
                if obj["kind"] == kind and obj["metadata"]["name"] == m.group(3):
                    return 200, obj
            return 404, _NOT_FOUND
        return 404, {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": 404,
            "message": f"fake: no route for {method} {path}",
        }

    def _pod(self, namespace: str, name: str) -> dict:
        s, tick = self.scenario, self.tick
        phase = "Pending"
        if s.failed_at is not None and tick >= s.failed_at:
            phase = "Failed"
        elif s.succeeded_at is not None and tick >= s.succeeded_at:
            phase = "Succeeded"
        node_name = None
        if s.scheduled_at is not None and tick >= s.scheduled_at:
            node_name = [n for t, n in s.nodes if tick >= t][-1]["metadata"]["name"]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "nvidia-smi"}], "nodeName": node_name},
            "status": {"phase": phase},
        }

    @staticmethod
    def _event(name: str, index: int, event: tuple[str, str]) -> dict:
        reason, message = event
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{index}", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": name},
            "reason": reason,
            "message": message,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                status, payload = fake.respond(self.command, url.path, parse_qs(url.query), body)
                if isinstance(payload, bytes):  # a log as the node wrote it
                    data = payload
                elif isinstance(payload, str):
                    data = payload.encode()
                else:
                    data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header(
                    "Content-Type",
                    "text/plain" if isinstance(payload, str | bytes) else "application/json",
                )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _serve

            def log_message(self, *args: object) -> None:
                pass

        return Handler
