"""The NVMe instance store as one RAID0 array under kubelet and containerd (`instance_store`).

EKS's UltraServer guide ("Use P6e-GB200 UltraServers with Amazon EKS") recommends it for
p6e-gb200's 3 x 7.5 TB: the EKS AMIs leave instance stores unformatted and unmounted, and
nodeadm's `spec.instance.localStorage.strategy: RAID0` stripes them and moves containerd's and
kubelet's state onto the array, so pods' ephemeral storage and images share it (nodeadm API
reference, awslabs/amazon-eks-ami nodeadm/doc/api.md, LocalStorageStrategy: RAID0, RAID10,
Mount). Node groups carry that NodeConfig in the launch template's user data, as MIME
multi-part: EKS merges the user data of a launch template without an AMI with its own
bootstrap, and AL2023's must be MIME multi-part (EKS UG "Customize managed nodes with launch
templates", "Amazon EC2 user data"; the part type application/node.eks.aws as in nodeadm's
test/e2e/cases/mime-userdata-merge). Karpenter pools get its own EC2NodeClass field,
`instanceStorePolicy: RAID0`.

Default: raid0 on UltraServer pools (the guide's recommendation), none elsewhere: turning it
on for an existing pool changes its launch template or EC2NodeClass, which rolls every node,
and moves its images and ephemeral storage off the EBS volume, a choice its owner makes.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpu_pool.settings import PoolSettings

RAID0 = "RAID0"
NODE_CONFIG_API = "node.eks.aws/v1alpha1"
# MIME part boundary and part type of a NodeConfig in user data (nodeadm doc/examples.md).
_BOUNDARY = "//"
NODE_CONFIG_CONTENT_TYPE = "application/node.eks.aws"


def resolved_instance_store(pool: PoolSettings, *, ultraserver: bool) -> bool:
    """Whether the pool's nodes stripe their instance store: `instance_store`, or by default on
    an UltraServer pool (`ultraserver`)."""
    if pool.instance_store is not None:
        return pool.instance_store == "raid0"
    return ultraserver


def local_storage_node_config() -> dict[str, Any]:
    """The NodeConfig that stripes the instance store; EKS's own part brings the cluster's."""
    return {
        "apiVersion": NODE_CONFIG_API,
        "kind": "NodeConfig",
        "spec": {"instance": {"localStorage": {"strategy": RAID0}}},
    }


def node_config_user_data(node_config: dict[str, Any]) -> str:
    """`node_config` as MIME multi-part user data (before base64)."""
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{_BOUNDARY}"\n\n'
        f"--{_BOUNDARY}\n"
        f"Content-Type: {NODE_CONFIG_CONTENT_TYPE}\n\n"
        f"---\n{yaml.safe_dump(node_config, sort_keys=False)}\n"
        f"--{_BOUNDARY}--\n"
    )
