"""Karpenter's API as gpu-pool uses it: kinds, labels, and the events its queue receives.

aws/karpenter-provider-aws v1.14.1: NodePool karpenter.sh/v1, EC2NodeClass karpenter.k8s.aws/v1;
the interruption rules of its getting-started CloudFormation. No CDK: the plan, the constructs
and the command read the same names.
"""

from __future__ import annotations

NODE_POOL_API = "karpenter.sh/v1"
NODE_CLASS_API = "karpenter.k8s.aws/v1"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_POOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
GPU_MANUFACTURER_LABEL = "karpenter.k8s.aws/instance-gpu-manufacturer"

# Construct id -> (event source, detail type), spelled as EventBridge delivers them. Karpenter
# drains the node on all but the rebalance recommendation, for which it only records an event.
INTERRUPTION_EVENTS = {
    "ScheduledChangeRule": ("aws.health", "AWS Health Event"),
    "SpotInterruptionRule": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "RebalanceRule": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "InstanceStateChangeRule": ("aws.ec2", "EC2 Instance State-change Notification"),
    "CapacityReservationInterruptionRule": (
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
    ),
}
MESSAGE_RETENTION_SECONDS = 300


def resource_name(pool_name: str) -> str:
    """The NodePool's and EC2NodeClass's name for a pool."""
    return f"gpu-pool-{pool_name}"
