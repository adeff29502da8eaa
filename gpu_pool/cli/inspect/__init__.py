"""Reading a running cluster with the official clients: nodes, DaemonSets, the autoscaler,
Karpenter's objects and its interruption queue."""
