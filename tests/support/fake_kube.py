"""A scripted Kubernetes API server on 127.0.0.1 for the verify and doctor tests.

It stays where the real control plane of tests/e2e cannot serve: what an autoscaler does
(Cluster Autoscaler's events and scale-ups, Karpenter's NodeClaims: no autoscaler runs there
yet), Auto Mode's own nodes, and long timelines on a fake clock. verify and doctor also run
against the real API server, scheduler and controllers (tests/e2e/test_verify.py).

Responses are shaped like the real API's (kind, apiVersion, metadata, spec, status), so the
official client deserializes them as it would a cluster's. A scenario is a timeline keyed by
`tick`, the number of times the (first) smoke-test pod has been read: at each tick it says what
the pod, its events, the pool's nodes, the device plugin and the autoscaler look like.

resource.k8s.io/v1 and the NVIDIA DRA driver are served as the real control plane behaves:
- A pod's `resourceClaims` entry naming a ResourceClaimTemplate gets a ResourceClaim generated
  by kube-controller-manager's resourceclaim controller, named `<pod>-<claim>-<5 random>` and
  owned by the pod, recorded in the pod's `status.resourceClaimStatuses`; no claim while the
  template does not exist (kubernetes/kubernetes pkg/controller/resourceclaim/controller.go,
  handleClaim). The claim's `status.allocation` is the scheduler's, set when the scenario says
  (by default when the pod is scheduled: the scheduler allocates and binds in one cycle).
- ResourceSlices are listed with the field selectors the API server supports for them
  (`metadata.name`, `spec.nodeName`, `spec.driver`: pkg/apis/resource/v1/conversion.go); any
  other field is a 400, as there.
- A ComputeDomain's controller creates its channel ResourceClaimTemplate in the domain's
  namespace under `spec.channel.resourceClaimTemplate.name`
  (NVIDIA/k8s-dra-driver-gpu v25.12.0 cmd/compute-domain-controller/resourceclaimtemplate.go);
  its status is the scenario's.
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


def deployment(namespace: str, name: str, image: str) -> dict:
    """A Deployment of one container running `image`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"spec": {"containers": [{"name": name, "image": image}]}},
        },
        "status": {"readyReplicas": 1},
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


DRA_NAMESPACE = "nvidia-dra-driver-gpu"


def dra_kubelet_plugin(desired=1, ready=1, namespace=DRA_NAMESPACE) -> dict:
    """The DRA driver chart's kubelet-plugin DaemonSet (templates/kubeletplugin.yaml, v25.12.0):
    the chart's standard labels, its pods selected by the component label."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-dra-driver-gpu-kubelet-plugin",
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "nvidia-dra-driver-gpu",
                "app.kubernetes.io/instance": "nvidia-dra-driver-gpu",
            },
        },
        "spec": {
            "selector": {"matchLabels": {"nvidia-dra-driver-gpu-component": "kubelet-plugin"}},
            "template": {"spec": {"containers": [{"name": "gpus"}]}},
        },
        "status": {
            "currentNumberScheduled": desired,
            "desiredNumberScheduled": desired,
            "numberMisscheduled": 0,
            "numberReady": ready,
        },
    }


def pod_on(node_name, namespace, name, labels, running=True) -> dict:
    """A pod bound to `node_name`: Running and Ready, or Pending (ContainerCreating)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node_name, "containers": [{"name": "c"}]},
        "status": {
            "phase": "Running" if running else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if running else "False"}],
        },
    }


def dra_plugin_pod(node_name="ip-10-0-1-5.ec2.internal", running=True) -> dict:
    return pod_on(
        node_name,
        DRA_NAMESPACE,
        f"nvidia-dra-driver-gpu-kubelet-plugin-{node_name.split('.')[0]}",
        {
            "app.kubernetes.io/name": "nvidia-dra-driver-gpu",
            "nvidia-dra-driver-gpu-component": "kubelet-plugin",
        },
        running,
    )


def device_plugin_pod(node_name="ip-10-0-1-5.ec2.internal", operator=False) -> dict:
    """gpu-pool's device plugin pod, or the GPU Operator's (its DaemonSet's label)."""
    if operator:
        return pod_on(
            node_name,
            "gpu-operator",
            "nvidia-device-plugin-daemonset-x2k9q",
            {"app": "nvidia-device-plugin-daemonset"},
        )
    return pod_on(
        node_name,
        "kube-system",
        "nvidia-device-plugin-gpu-7fz2d",
        {"app.kubernetes.io/name": "nvidia-device-plugin"},
    )


def resource_slice(node_name="ip-10-0-1-5.ec2.internal", driver="gpu.nvidia.com", devices=1):
    """A ResourceSlice as a kubelet plugin publishes it: one pool per node."""
    kind = "gpu" if driver == "gpu.nvidia.com" else "channel"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver}-abcde"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"{kind}-{i}"} for i in range(devices)],
        },
    }


def imex_daemon_pod(node_name, uid, running=True) -> dict:
    """An IMEX daemon pod of the ComputeDomain of `uid` (compute-domain-daemon.tmpl.yaml)."""
    return pod_on(
        node_name,
        DRA_NAMESPACE,
        f"computedomain-daemon-{uid[:8]}-{node_name.split('.')[0]}",
        {"resource.nvidia.com/computeDomain": uid},
        running,
    )


def domain_status(*nodes, ready=True) -> dict:
    """A ComputeDomain's status: each (node, clique, Ready|NotReady)."""
    return {
        "status": "Ready" if ready else "NotReady",
        "nodes": [
            {"name": n, "cliqueID": clique, "ipAddress": f"10.0.1.{i + 5}", "status": state}
            for i, (n, clique, state) in enumerate(nodes)
        ],
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


def _field_terms(query: dict[str, list[str]], supported: set[str]) -> dict[str, str] | None:
    """The equality terms of a field selector (`k=v,k2=v2`); None when one names a field
    outside `supported` (for ResourceSlices, exactly the API server's; for pods, the one the
    fake serves of the many it has)."""
    terms = dict(
        term.split("=", 1) for term in query.get("fieldSelector", [""])[0].split(",") if term
    )
    return terms if set(terms) <= supported else None


def _bad_field(query: dict[str, list[str]]) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "BadRequest",
        "code": 400,
        "message": f"field label not supported: {query.get('fieldSelector')}",
    }


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
    # DRA: the ResourceSlices there from a tick on; when the scheduler allocates the pods'
    # claims (None: when they are scheduled; -1: never); the node each smoke pod is bound to
    # (by creation order; default: the last scripted node); a ComputeDomain's status over time.
    resource_slices: list[tuple[int, dict]] = field(default_factory=list)
    allocated_at: int | None = None
    pod_nodes: list[str] = field(default_factory=list)
    domain_status: list[tuple[int, dict]] = field(default_factory=list)
    # Pods bound to nodes at a tick (e.g. a kubelet plugin that starts late): (tick, pod).
    later_pods: list[tuple[int, dict]] = field(default_factory=list)
    # Whether the ComputeDomain CRD is installed (the driver's ComputeDomains feature).
    compute_domain_crd: bool = True
    # The DeviceClasses installed (the driver's chart installs them).
    device_classes: list[str] = field(default_factory=list)
    # Deployments beside gpu-pool's controllers (a Cluster Autoscaler of the cluster's own).
    deployments: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Access:
    """A resource request's authorization attributes, as the API server derives them from its
    path and method (k8s.io/apiserver pkg/endpoints/request/requestinfo.go): GET on a
    collection is list (watch with watch=true), on a name get; POST create; DELETE delete;
    `resource` with its subresource (pods/log)."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    name: str | None = None


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def access_of(method: str, path: str, query: dict[str, list[str]]) -> Access | None:
    """`path`'s Access, or None for a non-resource path (/version, discovery)."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) > 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = "/".join([rest[0], *rest[2:3]])
    if method == "GET":
        collection = len(rest) == 1
        watch = query.get("watch", [""])[0] in ("true", "1")
        verb = ("watch" if watch else "list") if collection else "get"
    else:
        verb = _VERBS[method]
    return Access(verb, group, resource, namespace, rest[1] if len(rest) > 1 else None)


@dataclass(frozen=True)
class Rights:
    """What the caller may do, as RBAC grants it: a ClusterRole's rules (through a
    ClusterRoleBinding: every namespace and the cluster scope) and a Role's in its namespace
    alone (Kubernetes docs, "Using RBAC Authorization"). A rule allows a request when its
    apiGroups, resources and verbs each hold the request's (or "*")."""

    cluster_rules: tuple[dict, ...] = ()
    namespace_rules: tuple[tuple[str, dict], ...] = ()

    def allow(self, access: Access) -> bool:
        rules = [
            *self.cluster_rules,
            *(r for ns, r in self.namespace_rules if ns == access.namespace),
        ]
        return any(
            _holds(rule["apiGroups"], access.group)
            and _holds(rule["resources"], access.resource)
            and _holds(rule["verbs"], access.verb)
            for rule in rules
        )


def _holds(values: list[str], value: str) -> bool:
    return "*" in values or value in values


def rights_of(manifests: list[dict]) -> Rights:
    """The Rights of a subject bound to each ClusterRole and Role of `manifests`."""
    return Rights(
        tuple(r for m in manifests if m["kind"] == "ClusterRole" for r in m["rules"]),
        tuple(
            (m["metadata"]["namespace"], r)
            for m in manifests
            if m["kind"] == "Role"
            for r in m["rules"]
        ),
    )


def forbidden(access: Access, user: str = "gpu-pool-verify") -> dict:
    """The API server's 403 Status: NewForbidden with forbiddenMessage's text
    (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go; apimachinery
    pkg/api/errors NewForbidden: `<resource>.<group> "<name>" is forbidden: <message>`)."""
    resource, _, _ = access.resource.partition("/")
    qualified = f"{resource}.{access.group}" if access.group else resource
    scope = (
        f'in the namespace "{access.namespace}"' if access.namespace else "at the cluster scope"
    )
    name = access.name
    named = f' "{name}"' if name else ""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{qualified}{named} is forbidden: User "{user}" cannot {access.verb} '
        f'resource "{access.resource}" in API group "{access.group}" {scope}',
        "reason": "Forbidden",
        "details": {**({"name": name} if name else {}), "group": access.group, "kind": resource},
        "code": 403,
    }


class FakeKubernetes:
    def __init__(self, scenario: Scenario, rights: Rights | None = None) -> None:
        """`rights`: what the caller may do; every other resource request is refused with the
        API server's 403 (None: everything is allowed, as for a cluster admin)."""
        self.scenario = scenario
        self.rights = rights
        # Every resource request's Access, and those refused.
        self.accesses: list[Access] = []
        self.refused: list[Access] = []
        self.tick = 0
        self.created: list[dict] = []
        self.deleted: list[str] = []
        # resource.k8s.io and ComputeDomain objects: created (kind, name, body) and deleted
        # (kind, name); claims the resourceclaim controller generated, by name.
        self.created_objects: list[tuple[str, str, dict]] = []
        self.deleted_objects: list[tuple[str, str]] = []
        self.templates: dict[str, dict] = {}
        self.claims: dict[str, dict] = {}
        self.domain: dict | None = None
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
        access = access_of(method, path, query)
        if access is not None:
            self.accesses.append(access)
            if self.rights is not None and not self.rights.allow(access):
                self.refused.append(access)
                return 403, forbidden(access)
        return self._respond(method, path, query, body)

    def _respond(
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
        if m := re.fullmatch(r"/api/v1(?:/namespaces/([^/]+))?/pods", path):
            selector = query.get("labelSelector", [""])[0]
            fields = _field_terms(query, {"spec.nodeName"})
            if fields is None:
                return 400, _bad_field(query)
            pods = s.pods + [p for t, p in s.later_pods if self.tick >= t]
            items = [
                p
                for p in pods
                if m.group(1) in (None, p["metadata"]["namespace"])
                and _selects(selector, p["metadata"].get("labels", {}))
                and all(p["spec"].get(k.split(".")[1]) == v for k, v in fields.items())
            ]
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
        if dra := self._dra(method, path, query, body):
            return dra
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)(/log)?", path):
            namespace, name, log = m.groups()
            if method == "DELETE":
                self.deleted.append(name)
                self.delete_queries.append(query)
                return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
            if log:
                return 200, s.log
            if not self.created or name == self.created[0]["metadata"]["name"]:
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
        if m := re.fullmatch(r"/apis/apps/v1(?:/namespaces/([^/]+))?/daemonsets", path):
            selector = query.get("labelSelector", [""])[0]
            return 200, {
                "kind": "DaemonSetList",
                "apiVersion": "apps/v1",
                "metadata": {},
                "items": [
                    d
                    for d in s.daemon_sets
                    if m.group(1) in (None, d["metadata"]["namespace"])
                    and _selects(selector, d["metadata"]["labels"])
                ],
            }
        if path == "/apis/apps/v1/deployments":
            items = [d for d in (s.autoscaler, s.karpenter) if d is not None] + s.deployments
            return 200, {"kind": "DeploymentList", "apiVersion": "apps/v1", "items": items}
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
        index = [p["metadata"]["name"] for p in self.created].index(name)
        if s.scheduled_at is not None and tick >= s.scheduled_at:
            node_name = (
                s.pod_nodes[index]
                if s.pod_nodes
                else [n for t, n in s.nodes if tick >= t][-1]["metadata"]["name"]
            )
        created = self.created[index]
        status: dict = {"phase": phase}
        claim_statuses = self._generate_claims(namespace, created, node_name)
        if claim_statuses:
            status["resourceClaimStatuses"] = claim_statuses
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "containers": [{"name": "nvidia-smi"}],
                "nodeName": node_name,
                **(
                    {"resourceClaims": created["spec"]["resourceClaims"]}
                    if "resourceClaims" in created["spec"]
                    else {}
                ),
            },
            "status": status,
        }

    # -- resource.k8s.io/v1 and the DRA driver ------------------------------------------------

    def _generate_claims(self, namespace: str, pod: dict, node_name: str | None) -> list[dict]:
        """The resourceclaim controller's claims for the pod's template entries (one per
        entry whose template exists), allocated by the scheduler as the scenario says."""
        s, statuses = self.scenario, []
        for entry in pod["spec"].get("resourceClaims", []):
            template = self.templates.get(entry["resourceClaimTemplateName"])
            if template is None:
                continue
            base = f"{pod['metadata']['name']}-{entry['name']}-"
            name = next((c for c in self.claims if c.startswith(base)), base + "x7k2p")
            claim = self.claims.setdefault(
                name,
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "annotations": {"resource.kubernetes.io/pod-claim-name": entry["name"]},
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "name": pod["metadata"]["name"],
                                "uid": "0a1b2c3d",
                                "controller": True,
                            }
                        ],
                    },
                    "spec": template["spec"]["spec"],
                },
            )
            allocated_at = s.scheduled_at if s.allocated_at is None else s.allocated_at
            if node_name and allocated_at is not None and 0 <= allocated_at <= self.tick:
                request = template["spec"]["spec"]["devices"]["requests"][0]
                driver = (
                    "gpu.nvidia.com"
                    if request["exactly"]["deviceClassName"] == "gpu.nvidia.com"
                    else "compute-domain.nvidia.com"
                )
                count = request["exactly"].get("count", 1)
                claim["status"] = {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": request["name"],
                                    "driver": driver,
                                    "pool": node_name,
                                    "device": f"{request['name']}-{i}",
                                }
                                for i in range(count)
                            ]
                        }
                    },
                    "reservedFor": [
                        {"resource": "pods", "name": pod["metadata"]["name"], "uid": "0a1b2c3d"}
                    ],
                }
            statuses.append({"name": entry["name"], "resourceClaimName": name})
        return statuses

    def _dra(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any] | None:
        s = self.scenario
        if path == "/apis/resource.k8s.io/v1/resourceslices":
            fields = _field_terms(query, {"metadata.name", "spec.nodeName", "spec.driver"})
            if fields is None:
                return 400, _bad_field(query)
            current = [r for t, r in s.resource_slices if self.tick >= t]
            items = [
                r
                for r in current
                if all(
                    (r["metadata"] if k == "metadata.name" else r["spec"]).get(k.split(".")[1])
                    == v
                    for k, v in fields.items()
                )
            ]
            return 200, {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSliceList",
                "metadata": {},
                "items": items,
            }
        if m := re.fullmatch(r"/apis/resource\.k8s\.io/v1/deviceclasses/([^/]+)", path):
            if m.group(1) not in s.device_classes:
                return 404, _NOT_FOUND
            return 200, {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": m.group(1)},
                "spec": {},
            }
        m = re.fullmatch(
            r"/apis/(resource\.k8s\.io/v1|resource\.nvidia\.com/v1beta1)/namespaces/([^/]+)/"
            r"(resourceclaimtemplates|resourceclaims|computedomains)(?:/([^/]+))?",
            path,
        )
        if m is None:
            return None
        _, namespace, plural, name = m.groups()
        if plural == "computedomains" and not s.compute_domain_crd:
            return 404, {**_NOT_FOUND, "message": "the server could not find the requested resource"}
        kind = {
            "resourceclaimtemplates": "ResourceClaimTemplate",
            "resourceclaims": "ResourceClaim",
            "computedomains": "ComputeDomain",
        }[plural]
        if method == "POST":
            created = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
            self.created_objects.append((kind, body["metadata"]["name"], body))
            if kind == "ResourceClaimTemplate":
                self.templates[body["metadata"]["name"]] = created
            elif kind == "ComputeDomain":
                created["metadata"]["uid"] = "5f0c2a1e-cd01-4e55-9a3b-2b7d1c9e0f11"
                self.domain = created
                self._channel_template(namespace, created)
            return 201, created
        if method == "DELETE":
            # As the API server does for these kinds, the answer is the object deleted.
            gone = self.templates.get(name) if kind == "ResourceClaimTemplate" else self.domain
            if gone is None:
                return 404, _NOT_FOUND
            self.deleted_objects.append((kind, name))
            return 200, gone
        if kind == "ResourceClaim" and name in self.claims:
            return 200, self.claims[name]
        if kind == "ComputeDomain" and self.domain is not None:
            status = [d for t, d in s.domain_status if self.tick >= t][-1:]
            return 200, {**self.domain, **({"status": status[0]} if status else {})}
        return 404, _NOT_FOUND

    def _channel_template(self, namespace: str, domain: dict) -> None:
        """The ComputeDomain controller's channel ResourceClaimTemplate for `domain`."""
        name = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
        self.templates[name] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "channel",
                                "exactly": {
                                    "deviceClassName": "compute-domain-default-channel.nvidia.com"
                                },
                            }
                        ]
                    }
                }
            },
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
