"""Cluster Autoscaler, and what it shares with Karpenter as a controller (chart, role,
credentials). The provisioners' pools are karpenter/, nodegroups/ and auto_mode/."""
