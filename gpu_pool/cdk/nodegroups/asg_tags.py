"""Writes Cluster Autoscaler tags onto a managed node group's Auto Scaling group.

Tags set on AWS::EKS::Nodegroup do not propagate to its ASG (EKS API reference, CreateNodegroup
`tags`: they "do not propagate to any other resources associated with the node group"), so one
custom resource per node group writes them, and deletes the ones a previous deploy wrote that
the settings no longer have (handler/index.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from gpu_pool.cdk.nodegroups.provider import nodegroup_resource

RESOURCE_TYPE = "Custom::GpuPoolAsgTags"


class AsgTags(Construct):
    """Cluster Autoscaler tags on the ASG behind one managed node group.

    :ivar asg_name: the name of the ASG EKS made for the node group (a deploy-time token).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.ICluster,
        nodegroup: eks.CfnNodegroup,
        tags: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        resource = nodegroup_resource(
            self,
            cluster=cluster,
            nodegroup=nodegroup,
            resource_type=RESOURCE_TYPE,
            # A list, not a map: the discovery tag's key holds the cluster name, a token.
            properties={
                "Tags": [{"Key": key, "Value": value} for key, value in sorted(tags.items())]
            },
        )
        self.asg_name = resource.get_att_string("AsgName")
