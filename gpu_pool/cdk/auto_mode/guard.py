"""The new cluster's Auto Mode guard: a deploy that would turn EKS Auto Mode off fails, unless
the settings turn it off on purpose.

Disabling Auto Mode (compute, block storage and load balancing together) terminates its
instances and deletes the load balancers it manages, users' own included (EKS user guide,
"Disable EKS Auto Mode"). The synth cannot see what is deployed: with `cluster.auto_mode`
unset, removing the last auto-mode pool renders the cluster with Auto Mode off. CloudFormation
can: this custom resource holds the rendered state, the stack's handler (NodegroupHandler,
handler/index.py) compares it with the previous deploy's and fails the update, and the cluster
depends on it, so the update stops before the cluster is touched. A rollback is never refused:
the handler asks CloudFormation whether the stack is rolling back before it refuses, so its role
may describe this stack (rollback_statement).
"""

from __future__ import annotations

from aws_cdk import CfnResource, CustomResource, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from gpu_pool.cdk.nodegroups.provider import NodegroupHandler

RESOURCE_TYPE = "Custom::GpuPoolAutoModeGuard"


def guard_auto_mode(
    cluster: eks.Cluster, *, name: str, enabled: bool, turn_off_confirmed: bool
) -> CustomResource:
    """The guard of `cluster` (named `name`), rendered with Auto Mode `enabled` or not;
    `turn_off_confirmed`: the settings say `cluster.auto_mode: false`."""
    stack = Stack.of(cluster)
    handler = NodegroupHandler.of_stack(stack)
    handler.role.add_to_principal_policy(rollback_statement(stack))
    guard = CustomResource(
        stack,
        "AutoModeGuard",
        service_token=handler.provider.service_token,
        resource_type=RESOURCE_TYPE,
        properties={
            "ClusterName": name,
            "AutoMode": str(enabled).lower(),
            "TurnOffConfirmed": str(turn_off_confirmed).lower(),
        },
    )
    # The cluster resource alone waits for it: its children (node groups, manifests) need not.
    resource = cluster.node.default_child
    if isinstance(resource, CfnResource):
        resource.node.add_dependency(guard)
    return guard


def rollback_statement(stack: Stack) -> iam.PolicyStatement:
    """DescribeStacks on this stack alone (AWS::StackId, the ARN the request's StackId gives),
    which tells a rollback from a deploy."""
    return iam.PolicyStatement(
        actions=["cloudformation:DescribeStacks"], resources=[stack.stack_id]
    )
