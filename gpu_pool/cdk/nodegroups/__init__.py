"""Managed node groups for Cluster Autoscaler pools: the groups, their launch template, their
scaling bounds and ASG tags, and the Lambda that applies the last two."""
