"""The model layer: facts gpu-pool is built on, with no settings and no CDK.

The GPU catalog, pinned versions, the labels and tags other systems read, Karpenter's API names,
the EKS AMIs, kube-scheduler's filtering rules, and the Finding every rule returns.
"""
