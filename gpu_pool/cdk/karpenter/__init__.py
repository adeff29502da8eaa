"""Karpenter: its installation once per cluster (controller, IAM, interruption queue) and a
NodePool with its EC2NodeClass per pool."""
