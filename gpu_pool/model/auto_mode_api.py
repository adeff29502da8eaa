"""EKS Auto Mode's API as gpu-pool uses it: kinds, labels, policies and limits.

Auto Mode runs Karpenter itself: a GPU pool is a karpenter.sh/v1 NodePool whose nodeClassRef
names an eks.amazonaws.com/v1 NodeClass, with requirement keys of its own (`eks.amazonaws.com/`
where Karpenter's are `karpenter.k8s.aws/`). Sources: EKS user guide, automode/
create-node-pool.adoc ("EKS Auto Mode Supported Labels"), create-node-class.adoc ("Node Class
Specification", "Create node class access entry"), auto-accelerated.adoc, automode.adoc.
"""

from __future__ import annotations

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
