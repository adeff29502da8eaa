"""Constructs of one cluster in several stacks of an app: which splits CloudFormation can deploy.

A pool's stack uses the cluster (its name, its kubectl provider), so it deploys after the
cluster's stack. Cluster Autoscaler's priority expander names every node group's ASG in its
priorities ConfigMap (a manifest in the autoscaler's stack): an autoscaler in a stack the
pool's stack deploys after would need the pool's ASG names before they exist, a dependency
cycle CDK reports only as a jsii DependencyCycle error at synth. That split is refused here,
when the second of the two constructs is created, with what to move where. Other expanders
find the ASGs by tag at run time: any split works.
"""

from __future__ import annotations

from aws_cdk import Stack
from constructs import Construct, IConstruct

from gpu_pool.cdk.report import located
from gpu_pool.settings import ConfigError


def check_priority_stacks(autoscaler: Construct, pool: Construct, cluster: IConstruct) -> None:
    """Raise ConfigError if `autoscaler` (priority expander) naming the ASGs of `pool` makes a
    dependency cycle between their stacks."""
    autoscaler_stack, pool_stack = Stack.of(autoscaler), Stack.of(pool)
    if autoscaler_stack is pool_stack or not _deploys_before(
        autoscaler_stack, pool_stack, Stack.of(cluster)
    ):
        return
    raise ConfigError(
        f"the priority expander of {located(autoscaler)} names the ASGs of the node groups of "
        f"{located(pool)}, but stack '{pool_stack.node.path}' deploys after "
        f"stack '{autoscaler_stack.node.path}': create the ClusterAutoscaler in stack "
        f"'{pool_stack.node.path}' (or in a stack that depends on it), or set "
        "AutoscalerSettings(expander='least-waste'), which finds the ASGs by their tags alone"
    )


def _deploys_before(first: Stack, then: Stack, cluster_stack: Stack) -> bool:
    """Whether `then` depends on `first`: through the cluster it uses, or the dependencies
    declared so far (references are added to them only at synth)."""
    seen: set[str] = set()
    todo = [then, cluster_stack]
    while todo:
        stack = todo.pop()
        if stack is first:
            return True
        if stack.node.path not in seen:
            seen.add(stack.node.path)
            todo.extend(stack.dependencies)
    return False
