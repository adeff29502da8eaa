"""Karpenter, the second way to scale a GPU pool (`provisioner: karpenter`).

plan.py resolves a pool into its NodePool and EC2NodeClass (no CDK, so the `gpu-pool` command
reads it too); checks.py holds the mode's guardrails; the constructs install Karpenter once per
cluster (controller.py, with iam.py and interruption.py) and render each pool
(node_pool.py).
"""
