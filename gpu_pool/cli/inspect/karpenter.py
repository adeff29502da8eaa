"""Reads Karpenter's side of a running cluster (for verify and doctor): its controller, a
pool's NodePool and EC2NodeClass, the NodeClaims it makes for the pool, the interruption queue.
EKS Auto Mode serves the same NodePool and NodeClaim API, with a NodeClass of its own and its
Karpenter run by EKS (no controller Deployment, no queue in the cluster).

Objects are read with the official client's CustomObjectsApi, as plain API dicts.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from kubernetes import client

from gpu_pool.cli.inspect.cluster import Verdict, read_system_deployment, running_verdict
from gpu_pool.model.karpenter_api import INTERRUPTION_EVENTS, NODE_POOL_LABEL, resource_name

CONTROLLER_DEPLOYMENT = "karpenter"
_NO_QUEUE = ("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue")
_KINDS = {
    "NodePool": ("karpenter.sh", "v1", "nodepools"),
    "EC2NodeClass": ("karpenter.k8s.aws", "v1", "ec2nodeclasses"),
    "NodeClass": ("eks.amazonaws.com", "v1", "nodeclasses"),
}
# The node class a pool's NodePool points to, by the pool's provisioner.
_NODE_CLASS = {"karpenter": "EC2NodeClass", "auto-mode": "NodeClass"}


def read_controller(apps: Any) -> Any | None:
    """The controller's Deployment, or None if there is none."""
    return read_system_deployment(apps, CONTROLLER_DEPLOYMENT)


def controller_state(deployment: Any | None) -> Verdict:
    """Whether the controller (its Deployment, from `read_controller`) runs, and which
    interruption queue it reads."""
    return running_verdict(
        deployment,
        CONTROLLER_DEPLOYMENT,
        "karpenter",
        "deploy the stack: a pool with provisioner: karpenter installs it",
        lambda running, ready: Verdict(
            "ok", "karpenter", f"{ready} ready, interruption queue {queue_name(running)!r}"
        ),
    )


def queue_name(deployment: Any) -> str:
    """The interruption queue the controller reads (its INTERRUPTION_QUEUE), '' if none."""
    for container in deployment.spec.template.spec.containers:
        for env in container.env or []:
            if env.name == "INTERRUPTION_QUEUE":
                return str(env.value or "")
    return ""


def read(custom: Any, kind: str, name: str) -> dict[str, Any] | None:
    group, version, plural = _KINDS[kind]
    try:
        return dict(custom.get_cluster_custom_object(group, version, plural, name))
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise


def not_true(obj: dict[str, Any]) -> list[str]:
    """Its status conditions that are not True, as `Type: reason: message`."""
    return [
        ": ".join([c["type"], *_reason_and_message(c)])
        for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("status") != "True"
    ]


def _reason_and_message(condition: dict[str, Any]) -> list[str]:
    """The condition's reason and message, those it has (both are optional in the API)."""
    return [condition[key] for key in ("reason", "message") if condition.get(key)]


def resource_state(custom: Any, kind: str, pool: str) -> Verdict:
    """A pool's NodePool or EC2NodeClass: present and Ready, or what its conditions say."""
    name = resource_name(pool)
    subject = f"{kind} {name}"
    obj = read(custom, kind, name)
    if obj is None:
        return Verdict("fail", subject, "not found", "deploy the stack (it applies the manifest)")
    conditions = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
    if conditions.get("Ready", {}).get("status") == "True":
        return Verdict("ok", subject, "Ready")
    problems = not_true(obj) or ["no status yet: is the controller running?"]
    return Verdict(
        "fail",
        subject,
        "; ".join(problems),
        f"kubectl describe {kind.lower()} {name} (and the controller's log)",
    )


def resource_states(custom: Any, pool: str, provisioner: str) -> list[Verdict]:
    """The pool's NodePool and its node class (EC2NodeClass, or Auto Mode's NodeClass), each
    judged by `resource_state`."""
    return [resource_state(custom, kind, pool) for kind in ("NodePool", _NODE_CLASS[provisioner])]


def node_claims(custom: Any, pool: str) -> list[dict[str, Any]]:
    """The NodeClaims Karpenter made for the pool's NodePool."""
    listed = custom.list_cluster_custom_object(
        "karpenter.sh",
        "v1",
        "nodeclaims",
        label_selector=f"{NODE_POOL_LABEL}={resource_name(pool)}",
    )
    return list(listed.get("items") or [])


def launch_problem(claim: dict[str, Any]) -> str | None:
    """The Launched condition's reason and message while it is not True, else None."""
    for condition in (claim.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Launched" and condition.get("status") != "True":
            return ": ".join(_reason_and_message(condition)) or "no reason given"
    return None


def queue_verdicts(name: str, aws: Any) -> list[Verdict]:
    """The controller reads an interruption queue (`name`, from `queue_name`); with AWS
    (`aws`: a boto3 client factory), the queue exists and each of the five rules sends to it."""
    if not name:
        return [
            Verdict(
                "fail",
                "interruption queue (none)",
                "the controller reads no queue (settings.interruptionQueue is empty)",
                "deploy the stack: it sets the chart's settings.interruptionQueue",
            )
        ]
    if aws is None:
        return [Verdict("warn", "interruption queue", "not checked: no AWS credentials or region")]
    subject = f"interruption queue {name}"
    sqs = aws("sqs")
    try:
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    except ClientError as err:
        # SQS's JSON protocol names the error QueueDoesNotExist; its query-compatible header
        # (which botocore prefers) the older AWS.SimpleQueueService.NonExistentQueue.
        if err.response["Error"]["Code"] not in _NO_QUEUE:
            raise
        return [
            Verdict("fail", subject, "does not exist", "deploy the stack (it creates the queue)")
        ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    rules = aws("events").list_rule_names_by_target(TargetArn=arn)["RuleNames"]
    if len(rules) < len(INTERRUPTION_EVENTS):
        return [
            Verdict(
                "fail",
                subject,
                f"{len(rules)} EventBridge rule(s) send to it, {len(INTERRUPTION_EVENTS)} expected",
                "deploy the stack (it creates the five rules); until then Spot and health "
                "interruptions reach no one",
            )
        ]
    return [Verdict("ok", subject, f"{len(rules)} EventBridge rules send to it")]
