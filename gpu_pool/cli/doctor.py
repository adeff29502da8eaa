"""`gpu-pool doctor`: check a running cluster's GPU pool without launching anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_pool.cli.inspect import karpenter as karpenter
from gpu_pool.cli.inspect.cluster import (
    MISSING_DEVICE_PLUGIN,
    Check,
    as_dict,
    asg_tag_checks,
    autoscaler_state,
    device_plugin_daemon_sets,
    device_plugin_reaches,
    gpu_allocatable,
    node_ready,
    pool_selector,
)
from gpu_pool.plan.pool import PoolPlan


def doctor_checks(
    core: Any,
    apps: Any,
    pools: Sequence[PoolPlan],
    cluster_name: str,
    aws: Any = None,
    custom: Any = None,
) -> list[Check]:
    """Every pool's nodes and their GPUs, the device plugins' reach; for node-group pools the
    autoscaler and (with AWS) the ASG tags; for Karpenter pools its controller, each NodePool,
    EC2NodeClass and unfinished NodeClaim, and (with AWS) the interruption queue.

    `aws`, when given, is a callable returning a boto3 client by service name; `custom` is the
    CustomObjectsApi Karpenter's objects are read with.
    """
    checks = []
    daemon_sets = device_plugin_daemon_sets(apps)
    for pool in pools:
        checks += _node_checks(core, pool, daemon_sets)
    checks += _device_plugin_rollout(daemon_sets)
    if any(pool.provisioner == "cluster-autoscaler" for pool in pools):
        checks.append(autoscaler_state(apps, cluster_name))
        if aws is None:
            checks.append(Check("warn", "ASG tags", "not checked: no AWS credentials or region"))
        else:
            checks += asg_tag_checks(aws("autoscaling"), aws("eks"), cluster_name)
    karpenter_pools = [pool for pool in pools if pool.provisioner == "karpenter"]
    if karpenter_pools:
        checks += _karpenter_checks(apps, custom, karpenter_pools, aws)
    return checks


def _karpenter_checks(apps: Any, custom: Any, pools: Sequence[PoolPlan], aws: Any) -> list[Check]:
    deployment = karpenter.read_controller(apps)
    controller = karpenter.controller_state(deployment)
    checks = [controller]
    for pool in pools:
        checks += karpenter.resource_states(custom, pool.name)
        for claim in karpenter.node_claims(custom, pool.name):
            problems = karpenter.not_true(claim)
            if problems:
                name = claim["metadata"]["name"]
                checks.append(
                    Check(
                        "fail",
                        f"NodeClaim {name}",
                        "; ".join(problems),
                        f"kubectl describe nodeclaim {name}",
                    )
                )
    if controller.status == "ok":
        checks += karpenter.queue_checks(karpenter.queue_name(deployment), aws)
    return checks


def _node_checks(core: Any, pool: PoolPlan, daemon_sets: list[Any]) -> list[Check]:
    checks = []
    nodes = [as_dict(n) for n in core.list_node(label_selector=pool_selector(pool)).items]
    if not nodes:
        checks.append(Check("ok", f"pool {pool.name}", "no nodes: the pool is at zero"))
    for node in nodes:
        name = node["metadata"]["name"]
        ready, problems = node_ready(node)
        gpus = gpu_allocatable(node)
        if not ready:
            checks.append(Check("fail", f"node {name}", f"not Ready: {problems}", "see kubelet"))
        elif gpus == 0:
            plugin = device_plugin_reaches(node, daemon_sets)
            checks.append(
                Check(
                    "fail",
                    f"node {name}",
                    f"Ready, but 0 nvidia.com/gpu; {plugin.detail}",
                    plugin.fix,
                )
            )
        else:
            checks.append(Check("ok", f"node {name}", f"Ready, nvidia.com/gpu: {gpus}"))
    return checks


def _device_plugin_rollout(daemon_sets: list[Any]) -> list[Check]:
    if not daemon_sets:
        return [MISSING_DEVICE_PLUGIN]
    checks = []
    for daemon_set in daemon_sets:
        # Both are required fields of DaemonSetStatus: the client always has them.
        desired = daemon_set.status.desired_number_scheduled
        ready = daemon_set.status.number_ready
        status = "ok" if ready == desired else "fail"
        checks.append(
            Check(
                status,
                f"DaemonSet {daemon_set.metadata.name}",
                f"{ready}/{desired} ready",
                ""
                if status == "ok"
                else "kubectl -n kube-system describe ds " + daemon_set.metadata.name,
            )
        )
    return checks


def format_checks(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        lines.append(f"[{check.status:>4}] {check.subject}: {check.detail}")
        if check.fix:
            lines.append(f"       fix: {check.fix}")
    return "\n".join(lines)
