"""`gpu-pool doctor`: check a running cluster's GPU pool without launching anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_pool.cli.inspect import karpenter as karpenter
from gpu_pool.cli.inspect.cluster import (
    MISSING_DEVICE_PLUGIN,
    Verdict,
    allocatable,
    as_dict,
    asg_tag_verdicts,
    autoscaler_state,
    device_plugin_daemon_sets,
    device_plugin_reaches,
    expected_gpu_resources,
    gpu_allocatable,
    node_ready,
    other_autoscalers,
    pod_running,
    pool_selector,
)
from gpu_pool.cli.inspect.dra import (
    DriverReader,
    device_class_verdicts,
    kubelet_plugin_daemon_sets,
    kubelet_plugin_rollout,
)
from gpu_pool.cli.inspect.gpu_operator import operator_node_verdict
from gpu_pool.cli.inspect.health import health_verdicts
from gpu_pool.cli.inspect.reserved import efa_verdict, reservation_verdict
from gpu_pool.cli.smoke_test import ultraserver, uses_dra
from gpu_pool.model.labels import GPU_RESOURCE, INSTANCE_TYPE_LABEL
from gpu_pool.model.versions import NVIDIA_GPU_OPERATOR
from gpu_pool.plan.metrics import CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES
from gpu_pool.plan.record import PoolRecord


def doctor_verdicts(
    core: Any,
    apps: Any,
    pools: Sequence[PoolRecord],
    cluster_name: str,
    aws: Any = None,
    custom: Any = None,
    metrics: str | None = None,
) -> list[Verdict]:
    """Every pool's nodes and their GPUs (and EFA interfaces), the device plugins' reach, each
    reserved pool's reservation (with AWS); for node-group pools the autoscaler and (with AWS)
    the ASG tags; for Karpenter pools its controller, each NodePool, EC2NodeClass and unfinished
    NodeClaim, and (with AWS) the interruption queue; for Auto Mode pools each NodePool,
    NodeClass and unfinished NodeClaim; with `metrics` (the `metrics.gpu` setting; None where
    the pools come from records, which do not say it) other than none, whether each GPU node
    exports them; last, each GPU node's health as the EKS node monitoring agent reports it, and
    what the pool's repair does about it. A DRA pool's nodes (gpu_software: dra-driver) are
    judged by the driver's ResourceSlices, with no device plugin pod beside it, and the
    driver's kubelet-plugin DaemonSet and DeviceClasses are checked instead of the device
    plugin's DaemonSet.

    `aws`, when given, is a callable returning a boto3 client by service name; `custom` is the
    CustomObjectsApi Karpenter's objects are read with.
    """
    verdicts = []
    daemon_sets = device_plugin_daemon_sets(apps)
    driver = DriverReader(core)
    gpu_nodes, health = [], []
    for pool in pools:
        listed = core.list_node(label_selector=pool_selector(pool)).items
        nodes = [as_dict(n) for n in listed]
        verdicts += _node_verdicts(core, pool, nodes, daemon_sets, driver)
        gpu_nodes += nodes
        health += health_verdicts(pool, listed, cluster_name)
    # Auto Mode's device plugin is part of its nodes, not a DaemonSet (EKS user guide,
    # automode/auto-accelerated.adoc), the GPU Operator runs its own, Bottlerocket's is in the
    # AMI (gpu_software none) and a DRA pool has none: without other pools, none to find.
    if daemon_sets or any(
        p.provisioner != "auto-mode" and p.gpu_software == "device-plugin" for p in pools
    ):
        verdicts += _device_plugin_rollout(daemon_sets)
    if any(uses_dra(pool) for pool in pools):
        # Auto Mode nodes run the driver in their runtime, not as our release's DaemonSet.
        if any(uses_dra(p) and p.provisioner != "auto-mode" for p in pools):
            verdicts += kubelet_plugin_rollout(kubelet_plugin_daemon_sets(apps))
        ultra = any(uses_dra(pool) and ultraserver(pool) for pool in pools)
        verdicts += device_class_verdicts(driver.resource, compute_domains=ultra)
    verdicts += _reservation_verdicts(pools, aws)
    if metrics in EXPORTER_PODS:
        verdicts += _metrics_verdicts(core, gpu_nodes, metrics)
    # Beside gpu-pool's Cluster Autoscaler or Karpenter, whichever of them the pools use.
    verdicts += other_autoscalers(apps, {pool.provisioner for pool in pools})
    if any(pool.provisioner == "cluster-autoscaler" for pool in pools):
        verdicts.append(autoscaler_state(apps, cluster_name))
        if aws is None:
            verdicts.append(
                Verdict("warn", "ASG tags", "not checked: no AWS credentials or region")
            )
        else:
            verdicts += asg_tag_verdicts(aws("autoscaling"), aws("eks"), cluster_name, pools)
    karpenter_pools = [pool for pool in pools if pool.provisioner == "karpenter"]
    if karpenter_pools:
        deployment = karpenter.read_controller(apps)
        controller = karpenter.controller_state(deployment)
        verdicts += [controller, *_node_pool_verdicts(custom, karpenter_pools)]
        if controller.status == "ok":
            verdicts += karpenter.queue_verdicts(karpenter.queue_name(deployment), aws)
    # Auto Mode runs its Karpenter in EKS: no controller or queue to look at in the cluster.
    verdicts += _node_pool_verdicts(custom, [p for p in pools if p.provisioner == "auto-mode"])
    # Last: GPU health and repair, the agent's view of the nodes judged above.
    return verdicts + health


def _node_pool_verdicts(custom: Any, pools: Sequence[PoolRecord]) -> list[Verdict]:
    """Each pool's NodePool and node class, and its NodeClaims that are not all True."""
    verdicts = []
    for pool in pools:
        verdicts += karpenter.resource_states(custom, pool.name, pool.provisioner)
        for claim in karpenter.node_claims(custom, pool.name):
            problems = karpenter.not_true(claim)
            if problems:
                name = claim["metadata"]["name"]
                verdicts.append(
                    Verdict(
                        "fail",
                        f"NodeClaim {name}",
                        "; ".join(problems),
                        f"kubectl describe nodeclaim {name}",
                    )
                )
    return verdicts


def _node_verdicts(
    core: Any,
    pool: PoolRecord,
    nodes: list[dict[str, Any]],
    daemon_sets: list[Any],
    driver: DriverReader,
) -> list[Verdict]:
    verdicts = []
    if not nodes:
        verdicts.append(Verdict("ok", f"pool {pool.name}", "no nodes: the pool is at zero"))
    for node in nodes:
        name = node["metadata"]["name"]
        ready, problems = node_ready(node)
        gpus = gpu_allocatable(node)
        expected = expected_gpu_resources(pool, node)
        wanted = [r for r, count in (expected or {}).items() if count] or [GPU_RESOURCE]
        if not ready:
            verdicts.append(
                Verdict("fail", f"node {name}", f"not Ready: {problems}", "see kubelet")
            )
        elif uses_dra(pool):
            verdicts += driver.node_verdicts(
                name, ultraserver(pool), in_runtime=pool.provisioner == "auto-mode"
            )
        elif pool.gpu_software == "gpu-operator" and not any(
            allocatable(node, resource) for resource in wanted
        ):
            resources = " or ".join(wanted)
            step = operator_node_verdict(core, node, resources)
            detail = f"Ready, but 0 {resources}; {step.detail}"
            verdicts.append(Verdict("fail", f"node {name}", detail, step.fix))
        elif pool.sharing is not None and expected is not None:
            verdicts.append(_shared_node_verdict(pool.name, pool.sharing.mode, node, expected))
        elif gpus == 0 and pool.provisioner == "auto-mode":
            verdicts.append(
                Verdict(
                    "fail",
                    f"node {name}",
                    "Ready, but 0 nvidia.com/gpu; Auto Mode's own device plugin (not a "
                    "DaemonSet) has not registered its GPUs",
                    f"kubectl describe node {name} (conditions and events), and an AWS support "
                    "case if it stays so: EKS manages that plugin",
                )
            )
        elif gpus == 0:
            plugin = device_plugin_reaches(node, daemon_sets)
            verdicts.append(
                Verdict(
                    "fail",
                    f"node {name}",
                    f"Ready, but 0 nvidia.com/gpu; {plugin.detail}",
                    plugin.fix,
                )
            )
        else:
            verdicts.append(Verdict("ok", f"node {name}", f"Ready, nvidia.com/gpu: {gpus}"))
            efa = efa_verdict(node, pool)
            if efa is not None:
                verdicts.append(efa)
    return verdicts


# Where each `metrics.gpu` choice runs its DCGM exporter pods: (namespace, label selector, pod
# name prefix). dcgm-exporter: the chart's selector labels (NVIDIA/dcgm-exporter 4.8.2
# deployment/templates/_helpers.tpl), and the GPU Operator's own exporter on its pool
# (NVIDIA/gpu-operator v26.3.1 assets/state-dcgm-exporter/0800_daemonset.yaml); cloudwatch: the
# add-on's DaemonSet dcgm-exporter (aws/amazon-cloudwatch-agent-operator#89).
EXPORTER_PODS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "dcgm-exporter": (
        ("kube-system", "app.kubernetes.io/name=dcgm-exporter", ""),
        (NVIDIA_GPU_OPERATOR.namespace, "app=nvidia-dcgm-exporter", ""),
    ),
    "cloudwatch": (("amazon-cloudwatch", "", "dcgm-exporter-"),),
}
_METRICS_FIX = {
    "dcgm-exporter": "kubectl -n kube-system describe ds dcgm-exporter: its node affinity and "
    "tolerations must admit the node (redeploy the stack after changing a pool's taints)",
    "cloudwatch": "kubectl -n amazon-cloudwatch get pods -o wide: the add-on's DCGM exporter "
    "may not tolerate the pool's taints (aws/amazon-cloudwatch-agent-operator#290)",
}


def _metrics_verdicts(core: Any, nodes: list[dict[str, Any]], metrics: str) -> list[Verdict]:
    """Each Ready GPU node: whether a running, ready DCGM exporter pod of `metrics` is on it."""
    exporters: dict[str, str] = {}
    for namespace, selector, prefix in EXPORTER_PODS[metrics]:
        for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
            pod = as_dict(pod)
            # A running pod is bound: the scheduler set its spec.nodeName.
            if pod["metadata"]["name"].startswith(prefix) and pod_running(pod):
                exporters[pod["spec"]["nodeName"]] = f"{namespace}/{pod['metadata']['name']}"
    verdicts = []
    for node in nodes:
        name = node["metadata"]["name"]
        if not node_ready(node)[0]:
            continue
        exporter = exporters.get(name)
        verdicts.append(
            Verdict("ok", f"metrics {name}", f"exported by {exporter}")
            if exporter
            else Verdict(
                "warn",
                f"metrics {name}",
                f"no running DCGM exporter pod on it (metrics.gpu: {metrics})",
                _metrics_fix(node, metrics),
            )
        )
    return verdicts


def _metrics_fix(node: dict[str, Any], metrics: str) -> str:
    """What to check on a node without an exporter; for the CloudWatch add-on, first whether
    its exporter selects the node's instance type at all (GP-METRICS-02)."""
    instance_type = (node["metadata"].get("labels") or {}).get(INSTANCE_TYPE_LABEL)
    if (
        metrics == "cloudwatch"
        and instance_type is not None
        and instance_type not in CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES
    ):
        return (
            f"its instance type {instance_type} is not among those the CloudWatch add-on runs "
            "its DCGM exporter on (GP-METRICS-02): set metrics.gpu: dcgm-exporter for its GPU "
            "metrics"
        )
    return _METRICS_FIX[metrics]


def _shared_node_verdict(
    pool: str, mode: str, node: dict[str, Any], expected: dict[str, int]
) -> Verdict:
    """A sharing pool's node against the resources its sharing should advertise."""
    name = node["metadata"]["name"]
    seen = {resource: allocatable(node, resource) for resource in expected}
    advertised = ", ".join(f"{r}: {n}" for r, n in seen.items())
    if seen == expected:
        return Verdict("ok", f"node {name}", f"Ready, {advertised}")
    wanted = ", ".join(f"{r}: {n}" for r, n in expected.items())
    return Verdict(
        "fail",
        f"node {name}",
        f"Ready, advertises {advertised}; its pool's {mode} should make it {wanted}",
        f"check its label nvidia.com/device-plugin.config={pool} and restart the pool's "
        "device plugin (kubectl -n kube-system rollout restart daemonset "
        f"nvidia-device-plugin-{pool}; the GPU Operator's for a MIG pool)",
    )


def _reservation_verdicts(pools: Sequence[PoolRecord], aws: Any) -> list[Verdict]:
    """Each reserved pool's reservation: not started, active or ended (needs AWS)."""
    named = [p for p in pools if p.reservation_id is not None]
    if not named:
        return []
    if aws is None:
        return [Verdict("warn", "reservations", "not checked: no AWS credentials or region")]
    ec2 = aws("ec2")
    return [v for v in (reservation_verdict(ec2, p) for p in named) if v is not None]


def _device_plugin_rollout(daemon_sets: list[Any]) -> list[Verdict]:
    if not daemon_sets:
        return [MISSING_DEVICE_PLUGIN]
    verdicts = []
    for daemon_set in daemon_sets:
        # Both are required fields of DaemonSetStatus: the client always has them.
        desired = daemon_set.status.desired_number_scheduled
        ready = daemon_set.status.number_ready
        status = "ok" if ready == desired else "fail"
        verdicts.append(
            Verdict(
                status,
                f"DaemonSet {daemon_set.metadata.name}",
                f"{ready}/{desired} ready",
                ""
                if status == "ok"
                else "kubectl -n kube-system describe ds " + daemon_set.metadata.name,
            )
        )
    return verdicts


def format_verdicts(verdicts: list[Verdict]) -> str:
    lines = []
    for verdict in verdicts:
        lines.append(f"[{verdict.status:>4}] {verdict.subject}: {verdict.detail}")
        if verdict.fix:
            lines.append(f"       fix: {verdict.fix}")
    return "\n".join(lines)
