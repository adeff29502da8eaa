"""The construct layer: plans rendered as CloudFormation, one module per AWS or Kubernetes
concept (the stack, the cluster, pools, charts, Pod Identity, node groups, Karpenter, cdk-nag)."""
