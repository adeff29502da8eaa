"""EKS Auto Mode's API as gpu-pool uses it: kinds, labels, policies and limits.

Auto Mode runs Karpenter itself: a GPU pool is a karpenter.sh/v1 NodePool whose nodeClassRef
names an eks.amazonaws.com/v1 NodeClass, with requirement keys of its own (`eks.amazonaws.com/`
where Karpenter's are `karpenter.k8s.aws/`). Sources: EKS user guide, automode/
create-node-pool.adoc ("EKS Auto Mode Supported Labels"), create-node-class.adoc ("Node Class
Specification", "Create node class access entry"), auto-accelerated.adoc, automode.adoc.
"""

from __future__ import annotations

from typing import Any

NODE_CLASS_API = "eks.amazonaws.com/v1"
NODE_CLASS_GROUP = "eks.amazonaws.com"
GPU_MANUFACTURER_LABEL = "eks.amazonaws.com/instance-gpu-manufacturer"
INSTANCE_FAMILY_LABEL = "eks.amazonaws.com/instance-family"
GPU_COUNT_LABEL = "eks.amazonaws.com/instance-gpu-count"
# Every Auto Mode node carries it: `eks.amazonaws.com/compute-type: auto`.
COMPUTE_TYPE_LABEL = "eks.amazonaws.com/compute-type"
NODE_CLASS_LABEL = "eks.amazonaws.com/nodeclass"
# The EKS access policy a custom NodeClass's node role needs, with an access entry of type EC2.
AUTO_NODE_ACCESS_POLICY = "AmazonEKSAutoNodePolicy"
ACCESS_ENTRY_TYPE = "EC2"
# The managed policies EKS documents for an Auto Mode node role (automode/auto-learn-iam.adoc).
NODE_ROLE_POLICIES = ("AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly")
# NVIDIA families Auto Mode launches (automode/automode-learn-instances.adoc, "Supported
# instance reference", accelerated types).
GPU_FAMILIES = frozenset(
    {
        "p6-b200",
        "p6-b300",
        "p5",
        "p5e",
        "p5en",
        "p4d",
        "p4de",
        "p3dn",
        "g7e",
        "g6",
        "gr6",
        "g6e",
        "g5g",
        "g5",
        "g4dn",
    }
)
# Auto Mode replaces every node after at most 21 days (automode.adoc); its NodePools expire
# nodes after 336h unless told otherwise (create-node-pool.adoc, "Disruption").
MAX_NODE_LIFETIME_HOURS = 21 * 24
DEFAULT_EXPIRE_AFTER = "336h"

# The cluster role launches Auto Mode's nodes. Its AmazonEKSComputePolicy (v7) allows
# CreateFleet, RunInstances and CreateLaunchTemplate only with EKS's own tag keys
# (ForAllValues:StringLike aws:TagKeys: eks:eks-cluster-name, eks:kubernetes-node-class-name,
# eks:kubernetes-node-pool-name, kubernetes.io/cluster/*), and CreateTags for any tag only as part
# of those calls (ec2:CreateAction). A NodeClass with tags of its own needs the "Compute"
# statement the EKS user guide gives for the cluster role (security/iam-reference/
# auto-cluster-iam-role.adoc, "Custom AWS tags for EKS Auto resources"): the same launch calls
# with the same conditions on EKS's tags, without the limit on other keys. Its Resource is `*` as
# in the guide: EC2 checks the request tags on every resource a launch creates (instances,
# volumes, network interfaces, fleets, launch templates, Spot requests).
NODE_CLASS_TAGS_ACTIONS = ("ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate")
NODE_CLASS_TAGS_CONDITIONS = {
    "StringEquals": {
        "aws:RequestTag/eks:eks-cluster-name": "${aws:PrincipalTag/eks:eks-cluster-name}"
    },
    "StringLike": {
        "aws:RequestTag/eks:kubernetes-node-class-name": "*",
        "aws:RequestTag/eks:kubernetes-node-pool-name": "*",
    },
}


def node_class_tags_statement() -> dict[str, Any]:
    """The cluster role statement that lets Auto Mode launch nodes with a NodeClass's own tags,
    as IAM JSON."""
    return {
        "Effect": "Allow",
        "Action": list(NODE_CLASS_TAGS_ACTIONS),
        "Resource": "*",
        "Condition": NODE_CLASS_TAGS_CONDITIONS,
    }


# A customer key for the NodeClass's volumes (ephemeralStorage.kmsKeyID) is used by the cluster
# role: the key policy the EKS user guide gives (page auto-kms, "Enable EBS Volume Encryption
# with Customer Managed KMS Keys for EKS Auto Mode", step 1) lets it use the key and create
# grants for AWS resources (EBS attaching the volume).
VOLUME_KEY_USE_ACTIONS = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:DescribeKey",
)
VOLUME_KEY_GRANT_ACTIONS = ("kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant")
VOLUME_KEY_GRANT_CONDITIONS = {"Bool": {"kms:GrantIsForAWSResource": "true"}}


def volume_key_statements(principal: str | None, resource: str) -> list[dict[str, Any]]:
    """The two statements on the key, as IAM JSON: in a key policy with the cluster role as
    `principal` (resource `*`, the key itself), or with `principal` None in the role's own
    policy on the key's ARN, which is enough when the key policy delegates to IAM (as a key's
    default policy does)."""
    who = {"Principal": {"AWS": principal}} if principal is not None else {}
    return [
        {"Effect": "Allow", **who, "Action": list(VOLUME_KEY_USE_ACTIONS), "Resource": resource},
        {
            "Effect": "Allow",
            **who,
            "Action": list(VOLUME_KEY_GRANT_ACTIONS),
            "Resource": resource,
            "Condition": VOLUME_KEY_GRANT_CONDITIONS,
        },
    ]
