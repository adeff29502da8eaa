"""Reads a running cluster for the facts a GPU pool depends on (shared by verify and doctor).

Kubernetes objects come from the official client and are turned into plain API-shaped dicts
(camelCase keys), so the same scheduling model that checks the chart values at synth time
judges what is really deployed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from kubernetes import client

from gpu_pool.model import catalog
from gpu_pool.model.catalog import CatalogError
from gpu_pool.model.labels import (
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    LABEL_TAG_PREFIX,
    POOL_LABEL,
    RESOURCE_TAG_PREFIX,
    TAINT_TAG_PREFIX,
)
from gpu_pool.model.node_health import AGENT_CONDITIONS
from gpu_pool.model.scheduling import (
    node_affinity_matches,
    node_selector_matches,
    untolerated_taints,
)
from gpu_pool.plan.record import PoolRecord

DEVICE_PLUGIN_SELECTOR = "app.kubernetes.io/name=nvidia-device-plugin"
AUTOSCALER_DEPLOYMENT = "cluster-autoscaler"
SYSTEM_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class Verdict:
    """One verdict: `ok`, `warn` or `fail`, with what was seen and, if not ok, what to do."""

    status: str
    subject: str
    detail: str
    fix: str = ""


def as_dict(obj: Any) -> Any:
    """A client model as the API spells it (camelCase), for the scheduling model."""
    return client.ApiClient().sanitize_for_serialization(obj)


def pool_selector(pool: PoolRecord) -> str:
    """The label selector for the pool's nodes."""
    return f"{POOL_LABEL}={pool.name}"


def gpu_allocatable(node: dict[str, Any]) -> int:
    return allocatable(node, GPU_RESOURCE)


def allocatable(node: dict[str, Any], resource: str) -> int:
    """How many of `resource` the node advertises (0 if none)."""
    value = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def expected_gpu_resources(pool: PoolRecord, node: dict[str, Any]) -> dict[str, int] | None:
    """What a node of a sharing pool should advertise (its instance type's GPUs, shared as the
    pool says); None for a pool that does not share, or a node whose type is not known."""
    instance_type = ((node.get("metadata") or {}).get("labels") or {}).get(INSTANCE_TYPE_LABEL)
    if pool.sharing is None or instance_type is None:
        return None
    try:
        gpus = catalog.lookup(instance_type).gpu_count
    except CatalogError:
        return None
    return pool.sharing.advertised(gpus)


def ready_since(node: Any) -> datetime | None:
    """When the node (the client's model) last became Ready, its Ready condition's
    lastTransitionTime; None while it is not Ready."""
    for condition in node.status.conditions or []:
        if condition.type == "Ready" and condition.status == "True":
            return cast(datetime | None, condition.last_transition_time)
    return None


def node_ready(node: dict[str, Any]) -> tuple[bool, str]:
    """Whether the Ready condition is True, and the message of any condition that is not fine."""
    messages = []
    ready = False
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            ready = condition["status"] == "True"
            if not ready:
                messages.append(f"Ready={condition['status']}: {condition.get('message', '')}")
        elif (condition["status"] == "True") != (condition["type"] in AGENT_CONDITIONS):
            # MemoryPressure and the like are problems when True; the node monitoring
            # agent's conditions when not (True is healthy).
            messages.append(f"{condition['type']}: {condition.get('message', '')}")
    return ready, "; ".join(messages)


def pod_running(pod: dict[str, Any]) -> bool:
    """Whether the pod (API-shaped) is Running and its Ready condition True."""
    status = pod.get("status") or {}
    ready = any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or []
    )
    return status.get("phase") == "Running" and ready


MISSING_DEVICE_PLUGIN = Verdict(
    "fail",
    "device plugin",
    f"no DaemonSet labelled {DEVICE_PLUGIN_SELECTOR} in {SYSTEM_NAMESPACE}",
    "deploy the stack with pool.gpu_software: device-plugin",
)


def device_plugin_daemon_sets(apps: Any) -> list[Any]:
    return list(
        apps.list_namespaced_daemon_set(
            SYSTEM_NAMESPACE, label_selector=DEVICE_PLUGIN_SELECTOR
        ).items
    )


def device_plugin_reaches(node: dict[str, Any], daemon_sets: list[Any]) -> Verdict:
    """Whether one of the device plugin DaemonSets would run on this node, and if not, why."""
    name = node["metadata"]["name"]
    if not daemon_sets:
        return MISSING_DEVICE_PLUGIN
    labels = node["metadata"].get("labels") or {}
    taints = (node.get("spec") or {}).get("taints") or []
    reasons = []
    for daemon_set in daemon_sets:
        spec = as_dict(daemon_set)["spec"]["template"]["spec"]
        ds_name = daemon_set.metadata.name
        if not node_selector_matches(spec.get("nodeSelector"), labels):
            reasons.append(f"{ds_name}: nodeSelector {spec.get('nodeSelector')} does not match")
        elif not node_affinity_matches(spec.get("affinity"), labels):
            reasons.append(f"{ds_name}: its required node affinity does not match the node")
        elif missing := untolerated_taints(spec.get("tolerations"), taints):
            keys = ", ".join(f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in missing)
            reasons.append(f"{ds_name}: does not tolerate {keys}")
        else:
            return Verdict("ok", "device plugin", f"{ds_name} selects and tolerates {name}")
    return Verdict(
        "fail",
        "device plugin",
        f"no device plugin DaemonSet would run on {name}: " + "; ".join(reasons),
        "its nodeSelector must match the node's gpu-pool.io/pool label and its tolerations the "
        "pool's taints (redeploy the stack; `gpu-pool doctor` shows the DaemonSet)",
    )


def read_system_deployment(apps: Any, name: str) -> Any | None:
    """The Deployment `name` in kube-system, or None if there is none: a missing controller is
    a verdict, not an error."""
    try:
        return apps.read_namespaced_deployment(name, SYSTEM_NAMESPACE)
    except client.ApiException as err:
        if err.status != 404:
            raise
        return None


def running_verdict(
    deployment: Any | None,
    name: str,
    subject: str,
    install: str,
    when_running: Callable[[Any, int], Verdict],
) -> Verdict:
    """The verdict on a kube-system Deployment (from `read_system_deployment`): failing when it
    is missing (`install` says how to get it) or has no ready replica, else `when_running`'s
    on it and its ready replicas."""
    if deployment is None:
        return Verdict("fail", subject, f"no Deployment {name} in {SYSTEM_NAMESPACE}", install)
    ready = deployment.status.ready_replicas or 0
    if ready < 1:
        return Verdict(
            "fail",
            subject,
            f"{name} has no ready replica",
            f"kubectl -n {SYSTEM_NAMESPACE} logs deploy/{name}",
        )
    return when_running(deployment, ready)


def autoscaler_state(apps: Any, cluster_name: str) -> Verdict:
    """Whether Cluster Autoscaler runs and discovers this cluster's ASGs."""
    return running_verdict(
        read_system_deployment(apps, AUTOSCALER_DEPLOYMENT),
        AUTOSCALER_DEPLOYMENT,
        "autoscaler",
        "deploy the stack with autoscaler.enabled: true, or install Cluster Autoscaler",
        lambda deployment, ready: _discovery_state(deployment, ready, cluster_name),
    )


# gpu-pool's own controllers, (namespace, Deployment), by the provisioner that installs each.
_OWN_AUTOSCALERS = {
    "cluster-autoscaler": (SYSTEM_NAMESPACE, AUTOSCALER_DEPLOYMENT),
    "karpenter": (SYSTEM_NAMESPACE, "karpenter"),
}


def other_autoscalers(apps: Any, provisioners: set[str]) -> list[Verdict]:
    """For pools of these provisioners: a node autoscaler beside the ones gpu-pool installed
    for them (its Cluster Autoscaler, its Karpenter), another Cluster Autoscaler or Karpenter in
    any namespace, which AWS cannot show. Both would scale nodes for the same pending pods.
    Nothing where none of gpu-pool's runs (a cluster that keeps its own: autoscaler.enabled
    false; one gone missing is its own controller verdict's to say)."""
    found = {
        (d.metadata.namespace, d.metadata.name): kind
        for d in apps.list_deployment_for_all_namespaces().items
        if (kind := _autoscaler_kind(d)) is not None
    }
    own = {_OWN_AUTOSCALERS[p] for p in sorted(provisioners) if p in _OWN_AUTOSCALERS}
    running = sorted(own & set(found))
    if not running:
        return []
    ours = ", ".join(f"{namespace}/{name}" for namespace, name in running)
    return [
        Verdict(
            "fail",
            "autoscaler",
            f"a second autoscaler runs beside gpu-pool's {ours}: "
            f"{namespace}/{name} ({found[(namespace, name)]}); both would add nodes for the "
            "same pending pods",
            "keep yours with autoscaler.enabled: false (a deploy then removes gpu-pool's), or "
            f"remove {namespace}/{name}",
        )
        for namespace, name in sorted(set(found) - own)
    ]


def image_repository(image: str) -> str:
    """An image reference without its digest and tag: `registry:5000/a/b:v1@sha256:...` ->
    `registry:5000/a/b` (a tag is a colon after the last slash; a registry's port is not)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def _autoscaler_kind(deployment: Any) -> str | None:
    """Which autoscaler a Deployment runs, from its containers' images (Cluster Autoscaler:
    registry.k8s.io/autoscaling/cluster-autoscaler; Karpenter:
    public.ecr.aws/karpenter/controller), by tag or by digest, from any registry (a mirror),
    or from Cluster Autoscaler's command; None: neither."""
    for container in deployment.spec.template.spec.containers:
        repository = image_repository(container.image or "")
        command = " ".join(container.command or [])
        if repository.endswith("/cluster-autoscaler") or "cluster-autoscaler" in command:
            return "Cluster Autoscaler"
        if repository.endswith("/karpenter/controller"):
            return "Karpenter"
    return None


def _discovery_state(deployment: Any, ready: int, cluster_name: str) -> Verdict:
    """Whether the running autoscaler's auto-discovery flag names this cluster's ASG tag."""
    container = deployment.spec.template.spec.containers[0]
    args = [*(container.command or []), *(container.args or [])]
    discovery = next((a for a in args if a.startswith("--node-group-auto-discovery=")), "")
    if f"k8s.io/cluster-autoscaler/{cluster_name}" not in discovery:
        return Verdict(
            "fail",
            "autoscaler",
            f"runs, but does not discover this cluster's ASGs ({discovery or 'no discovery flag'})",
            f"its --node-group-auto-discovery must name k8s.io/cluster-autoscaler/{cluster_name}",
        )
    return Verdict("ok", "autoscaler", f"{ready} ready, {discovery}")


def asg_tag_verdicts(
    autoscaling: Any, eks: Any, cluster_name: str, pools: Sequence[PoolRecord] = ()
) -> list[Verdict]:
    """Each of the cluster's GPU ASGs: its GPU resource tags against the instance type (and,
    for a pool of `pools` that shares its GPUs, the shares its nodes advertise), its taint
    tags."""
    verdicts = []
    pages = autoscaling.get_paginator("describe_auto_scaling_groups").paginate(
        Filters=[{"Name": "tag:eks:cluster-name", "Values": [cluster_name]}]
    )
    sharing = {pool.name: pool.sharing for pool in pools if pool.sharing is not None}
    # A DRA driver pool's nodes advertise their GPUs as ResourceSlices, no nvidia.com/gpu: its
    # tag says 0 (plan/pool.py), or CA's instance table would promise GPUs.
    dra = {pool.name for pool in pools if pool.gpu_software == "dra-driver"}
    for group in (g for page in pages for g in page["AutoScalingGroups"]):
        tags = {t["Key"]: t["Value"] for t in group.get("Tags", [])}
        nodegroup = tags.get("eks:nodegroup-name")
        if nodegroup is None:
            continue
        described = eks.describe_nodegroup(clusterName=cluster_name, nodegroupName=nodegroup)[
            "nodegroup"
        ]
        types = described.get("instanceTypes")
        if not types:
            continue  # types only in a launch template: nothing to judge the tag against
        try:
            counts = {catalog.lookup(t).gpu_count for t in types}
        except CatalogError:
            continue  # not a GPU node group
        name = group["AutoScalingGroupName"]
        pool_name = tags.get(f"{LABEL_TAG_PREFIX}{POOL_LABEL}", "")
        shared = sharing.get(pool_name)
        if pool_name in dra:
            expected: dict[str, str] = {GPU_RESOURCE: "0"}
        elif len(counts) != 1:
            expected = {GPU_RESOURCE: "?"}
        elif shared is None:
            expected = {GPU_RESOURCE: str(counts.pop())}
        else:
            expected = {r: str(n) for r, n in shared.advertised(counts.pop()).items()}
        wrong = {
            r: tags.get(f"{RESOURCE_TAG_PREFIX}{r}")
            for r, n in expected.items()
            if tags.get(f"{RESOURCE_TAG_PREFIX}{r}") != n
        }
        if wrong:
            detail = "; ".join(
                f"{_tag_as_is(f'{RESOURCE_TAG_PREFIX}{r}', actual)}, but {'/'.join(types)} "
                + (
                    "advertises 0 with the DRA driver (its GPUs are ResourceSlice devices)"
                    if pool_name in dra
                    else f"has {expected[r]} GPU(s)"
                    if shared is None
                    else f"advertises {expected[r]} with its pool's {shared.mode}"
                )
                for r, actual in wrong.items()
            )
            verdicts.append(
                Verdict(
                    "fail",
                    f"ASG {name}",
                    detail,
                    "at zero nodes Cluster Autoscaler believes this tag: redeploy the stack "
                    "so the tag writer rewrites it",
                )
            )
            continue
        bad_taints = [
            f"{k}={v}"
            for k, v in tags.items()
            if k.startswith(TAINT_TAG_PREFIX)
            and not v.endswith((":NoSchedule", ":NoExecute", ":PreferNoSchedule"))
        ]
        if bad_taints:
            verdicts.append(
                Verdict(
                    "fail",
                    f"ASG {name}",
                    f"taint tags Cluster Autoscaler ignores: {', '.join(bad_taints)}",
                    "the value must be <value>:<Effect> in Kubernetes spelling (NoSchedule)",
                )
            )
            continue
        stale = _stale_template_tags(tags, described)
        if stale:
            verdicts.append(
                Verdict(
                    "fail",
                    f"ASG {name}",
                    f"node-template tags for labels or taints the node group no longer has: "
                    f"{', '.join(stale)}",
                    "a stale taint stops Cluster Autoscaler scaling this group up from zero: "
                    f"aws autoscaling delete-tags --tags ResourceId={name},"
                    "ResourceType=auto-scaling-group,Key=<key> (the key alone), or redeploy",
                )
            )
            continue
        advertised = ", ".join(f"{r}={n}" for r, n in expected.items())
        verdicts.append(Verdict("ok", f"ASG {name}", f"{nodegroup}: {advertised}"))
    return verdicts


def _tag_as_is(key: str, value: str | None) -> str:
    """A tag as the ASG has it: its key and value, or that it has none."""
    return f"tag {key}={value!r}" if value is not None else f"no tag {key}"


def _stale_template_tags(tags: dict[str, str], nodegroup: dict[str, Any]) -> list[str]:
    """Label and taint tags whose key the node group's labels or taints (DescribeNodegroup)
    do not have: left by a delete that did not happen (before gpu-pool sent DeleteTags with
    the key alone, EC2 Auto Scaling kept a tag whose given value did not match). An empty
    list or map is absent from the response: none."""
    labels = set(nodegroup.get("labels") or {})
    taints = {t["key"] for t in nodegroup.get("taints") or []}
    return sorted(
        key
        for key in tags
        if (key.startswith(LABEL_TAG_PREFIX) and key.removeprefix(LABEL_TAG_PREFIX) not in labels)
        or (key.startswith(TAINT_TAG_PREFIX) and key.removeprefix(TAINT_TAG_PREFIX) not in taints)
    )
