"""A Karpenter cluster as the fake API server plays it, and what verify says about its stalls."""

from __future__ import annotations

from tests.support.command import run
from tests.support.fake_kube import (
    Scenario,
    condition,
    karpenter_controller,
    karpenter_object,
    node_claim,
)

QUEUE = "gpu-pool-interruption"
QUEUE_URL = f"https://sqs.us-east-1.amazonaws.com/123456789012/{QUEUE}"
QUEUE_ARN = f"arn:aws:sqs:us-east-1:123456789012:{QUEUE}"
READY_OBJECTS = [
    karpenter_object("NodePool", "gpu-pool-gpu"),
    karpenter_object("EC2NodeClass", "gpu-pool-gpu"),
]
LAUNCHED = condition("Launched")
NOT_LAUNCHED = condition(
    "Launched",
    "False",
    "InsufficientCapacityError",
    "all requested instance types were unavailable during launch",
)

# Launched, but its node has not registered: neither Registered nor Ready is True.
UNREGISTERED_CLAIM = node_claim(
    "gpu-pool-gpu-x7k2p",
    "gpu",
    LAUNCHED,
    condition("Registered", "Unknown", "AwaitingRegistration"),
    condition("Ready", "False", "NotRegistered", "not registered"),
)


# What verify says to do about a NodeClaim that was not launched, or whose node never joined.
NOT_LAUNCHED_FIX = (
    "InsufficientCapacity: add instance types or zones to the pool, or use capacity "
    "reservations; UnauthorizedOperation: the controller's IAM (redeploy the stack)"
)
NOT_JOINED_FIX = (
    "the node role's EC2_LINUX access entry and the subnets' route to the API server: "
    "`kubectl describe nodeclaim gpu-pool-gpu-x7k2p`"
)


def karpenter_run(tmp_path, scenario, *extra, aws=None, command="verify"):
    config = tmp_path / "karpenter.yaml"
    config.write_text("pool:\n  provisioner: karpenter\n")
    return run(tmp_path, scenario, "--config", str(config), *extra, aws=aws, command=command)


def scenario(**kw) -> Scenario:
    """A Karpenter cluster: the controller runs, NodePool and EC2NodeClass are Ready, and no
    Cluster Autoscaler is installed."""
    return Scenario(
        **{
            "autoscaler": None,
            "karpenter": karpenter_controller(),
            "karpenter_objects": READY_OBJECTS,
            **kw,
        }
    )
