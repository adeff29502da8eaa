"""`gpu-pool doctor`: check a running cluster's GPU pool without launching anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_pool.cli.inspect import karpenter as karpenter
from gpu_pool.cli.inspect.cluster import (
    MISSING_DEVICE_PLUGIN,
    Verdict,
    as_dict,
    asg_tag_verdicts,
    autoscaler_state,
    device_plugin_daemon_sets,
    device_plugin_reaches,
    gpu_allocatable,
    node_ready,
    pool_selector,
)
from gpu_pool.cli.inspect.reserved import efa_verdict, reservation_id, reservation_verdict
from gpu_pool.plan.pool import PoolPlan


def doctor_verdicts(
    core: Any,
    apps: Any,
    pools: Sequence[PoolPlan],
    cluster_name: str,
    aws: Any = None,
    custom: Any = None,
) -> list[Verdict]:
    """Every pool's nodes and their GPUs (and EFA interfaces), the device plugins' reach, each
    reserved pool's reservation (with AWS); for node-group pools the autoscaler and (with AWS)
    the ASG tags; for Karpenter pools its controller, each NodePool,
    EC2NodeClass and unfinished NodeClaim, and (with AWS) the interruption queue.

    `aws`, when given, is a callable returning a boto3 client by service name; `custom` is the
    CustomObjectsApi Karpenter's objects are read with.
    """
    verdicts = []
    daemon_sets = device_plugin_daemon_sets(apps)
    for pool in pools:
        verdicts += _node_verdicts(core, pool, daemon_sets)
    verdicts += _device_plugin_rollout(daemon_sets)
    verdicts += _reservation_verdicts(pools, aws)
    if any(pool.provisioner == "cluster-autoscaler" for pool in pools):
        verdicts.append(autoscaler_state(apps, cluster_name))
        if aws is None:
            verdicts.append(
                Verdict("warn", "ASG tags", "not checked: no AWS credentials or region")
            )
        else:
            verdicts += asg_tag_verdicts(aws("autoscaling"), aws("eks"), cluster_name)
    karpenter_pools = [pool for pool in pools if pool.provisioner == "karpenter"]
    if karpenter_pools:
        verdicts += _karpenter_verdicts(apps, custom, karpenter_pools, aws)
    return verdicts


def _karpenter_verdicts(
    apps: Any, custom: Any, pools: Sequence[PoolPlan], aws: Any
) -> list[Verdict]:
    deployment = karpenter.read_controller(apps)
    controller = karpenter.controller_state(deployment)
    verdicts = [controller]
    for pool in pools:
        verdicts += karpenter.resource_states(custom, pool.name)
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
    if controller.status == "ok":
        verdicts += karpenter.queue_verdicts(karpenter.queue_name(deployment), aws)
    return verdicts


def _node_verdicts(core: Any, pool: PoolPlan, daemon_sets: list[Any]) -> list[Verdict]:
    verdicts = []
    nodes = [as_dict(n) for n in core.list_node(label_selector=pool_selector(pool)).items]
    if not nodes:
        verdicts.append(Verdict("ok", f"pool {pool.name}", "no nodes: the pool is at zero"))
    for node in nodes:
        name = node["metadata"]["name"]
        ready, problems = node_ready(node)
        gpus = gpu_allocatable(node)
        if not ready:
            verdicts.append(
                Verdict("fail", f"node {name}", f"not Ready: {problems}", "see kubelet")
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


def _reservation_verdicts(pools: Sequence[PoolPlan], aws: Any) -> list[Verdict]:
    """Each reserved pool's reservation: not started, active or ended (needs AWS)."""
    named = [p for p in pools if reservation_id(p) is not None]
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
