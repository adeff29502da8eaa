"""The events Karpenter's interruption queue receives (no CDK: the command reads them too)."""

# Construct id -> (event source, detail type), spelled as EventBridge delivers them.
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
