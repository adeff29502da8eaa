"""The plan layer: a pool's settings resolved once into what gets built for it.

Per pool: its node groups (or its Karpenter NodePool and EC2NodeClass), labels, taints, the
Cluster Autoscaler node template, and the chart that makes its GPUs allocatable. No CDK: the
rules, the constructs and the `gpu-pool` command all read the same plan.
"""
