"""A GPU node group's min and max size, applied without ever pushing a desired size.

The EKS API documents NodegroupScalingConfig (API_NodegroupScalingConfig.html):
- "When creating a node group, you must specify all or none of the properties. When updating a
  node group, you can specify any or none of the properties."
- desiredSize: "Whenever this parameter changes, the number of worker nodes in the node group is
  updated to the specified size ... the necessary number of worker nodes are terminated" (without
  PodDisruptionBudgets), and "If you use the Kubernetes Cluster Autoscaler, you shouldn't change
  the desiredSize value directly".
What CloudFormation sends when only MaxSize changes is not documented; eksctl-io/eksctl#3532 saw
the template's desired size come back. So the node group's ScalingConfig in the template is a
constant (all three properties, as creation requires) that no setting changes, and this custom
resource applies the settings through UpdateNodegroupConfig with only what differs: min and max,
and a desired size only on creation or when the live one falls outside the new bounds.
"""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.cdk.nodegroups.provider import nodegroup_resource

RESOURCE_TYPE = "Custom::GpuPoolNodegroupScaling"
# The node group's template ScalingConfig: gpu-pool's earlier defaults, so a stack deployed with
# them sees no change to it when it moves to this scheme.
TEMPLATE_SCALING = eks.CfnNodegroup.ScalingConfigProperty(min_size=0, desired_size=0, max_size=8)


class NodegroupScaling(Construct):
    """Min and max size (and the desired size at creation) of one managed node group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        nodegroup: eks.CfnNodegroup,
        min_size: int,
        max_size: int,
        desired_size_on_create: int,
    ) -> None:
        super().__init__(scope, construct_id)
        nodegroup_resource(
            self,
            cluster=cluster,
            nodegroup=nodegroup,
            resource_type=RESOURCE_TYPE,
            properties={
                "MinSize": min_size,
                "MaxSize": max_size,
                "DesiredSizeOnCreate": desired_size_on_create,
            },
        )
