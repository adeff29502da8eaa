"""The launch template every node group gpu-pool creates starts from.

Without one, a managed node group's volume is encrypted only if the account's EBS default says
so, and its metadata options are whatever EKS picks. This one pins both: a gp3 volume, always
encrypted (with a customer key when given), and IMDSv2 required with a hop limit of 1 by
default, so a pod, one network hop further than the node, cannot read the node role's
credentials (EKS Pod Identity gives pods their own). The node group keeps its instance types and
AMI type; the template carries no AMI, so EKS still builds the node's bootstrap, and no user data
but a pool's NodeConfig for its instance store (`add_node_config`), which EKS merges with its own.

A pool's `tags` go on its instances and their volumes through the template's TagSpecifications:
EKS copies a node group's own tags to neither ("Tag Amazon EC2 instances",
https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html), so without them cost
allocation by tag misses the GPU bill. Karpenter pools get the same through their EC2NodeClass.

A training pool's template adds its capacity (plan/capacity.py): the reservation it launches
into, for a Capacity Block the market type and the one instance type (EKS UG
ml/capacity-blocks-mng: in the template, not the node group), for EFA one interface per
network card, and the placement group its nodes launch into (cdk/capacity/efa.py). Interfaces carry
their security groups themselves: a template with NetworkInterfaces may not set
SecurityGroupIds (AWS PCS UG, "Create or update an EC2 launch template"; EC2
CreateLaunchTemplate), nor a SubnetId (EKS CreateNodegroup).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CfnTag, Fn
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from gpu_pool.model.ami import IMAGE_VOLUME
from gpu_pool.plan.capacity import CapacityPlan
from gpu_pool.plan.instance_store import node_config_user_data
from gpu_pool.settings import AmiFamily

# What a pool's tags go on: its nodes, and their EBS volumes.
INSTANCE_TAGGED = ("instance", "volume")


class NodeLaunchTemplate(Construct):
    """An AWS::EC2::LaunchTemplate for one pool's (or the system) node groups."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        ami_family: AmiFamily,
        disk_size_gib: int,
        kms_key_arn: str | None,
        imds_hop_limit: int,
        tags: Mapping[str, str] | None = None,
        capacity: CapacityPlan | None = None,
        instance_type: str | None = None,
        security_group_ids: Sequence[str] = (),
        placement_group: str | None = None,
    ) -> None:
        """`tags`: on every instance and volume launched from it (default none); `capacity`: a
        training pool's (default none); `instance_type`: a Capacity Block's one type;
        `security_group_ids`: an EFA pool's; `placement_group`: the placement group the nodes
        launch into, by name (cdk/capacity/efa.py)."""
        super().__init__(scope, construct_id)
        tag_list = [CfnTag(key=k, value=v) for k, v in sorted((tags or {}).items())]
        self.resource = ec2.CfnLaunchTemplate(
            self,
            "Resource",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                block_device_mappings=[
                    ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                        device_name=IMAGE_VOLUME[ami_family],
                        ebs=ec2.CfnLaunchTemplate.EbsProperty(
                            volume_size=disk_size_gib,
                            volume_type="gp3",
                            encrypted=True,
                            kms_key_id=kms_key_arn,
                            delete_on_termination=True,
                        ),
                    )
                ],
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                    http_endpoint="enabled",
                    http_tokens="required",
                    http_put_response_hop_limit=imds_hop_limit,
                ),
                tag_specifications=[
                    ec2.CfnLaunchTemplate.TagSpecificationProperty(
                        resource_type=resource_type, tags=tag_list
                    )
                    for resource_type in INSTANCE_TAGGED
                ]
                if tag_list
                else None,
            ),
        )
        if capacity is not None:
            self._add_capacity(capacity, instance_type, list(security_group_ids), placement_group)
        # What a node group's LaunchTemplate takes: this template at its newest version, so a
        # change rolls the nodes (an update that respects PDBs, not a replacement).
        self.id = self.resource.ref
        self.version = self.resource.attr_latest_version_number

    def _add_capacity(
        self,
        capacity: CapacityPlan,
        instance_type: str | None,
        security_group_ids: list[str],
        placement_group: str | None,
    ) -> None:
        data = {
            "CapacityReservationSpecification": capacity.capacity_reservation_specification(),
            "InstanceMarketOptions": capacity.instance_market_options(),
            "InstanceType": instance_type if capacity.capacity_block else None,
            "NetworkInterfaces": capacity.network_interfaces(security_group_ids) or None,
            "Placement": {"GroupName": placement_group} if placement_group else None,
        }
        for key, value in data.items():
            if value is not None:
                self.resource.add_property_override(f"LaunchTemplateData.{key}", value)


def add_node_config(template: NodeLaunchTemplate, node_config: dict[str, Any]) -> None:
    """The template's user data: `node_config`, a nodeadm NodeConfig, as MIME multi-part in
    base64 (plan/instance_store.py), which EKS merges with the bootstrap it writes."""
    template.resource.add_property_override(
        "LaunchTemplateData.UserData", Fn.base64(node_config_user_data(node_config))
    )
