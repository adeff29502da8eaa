"""Karpenter's API as gpu-pool uses it: kinds, labels, and the events its queue receives.

aws/karpenter-provider-aws v1.14.1: NodePool karpenter.sh/v1, EC2NodeClass karpenter.k8s.aws/v1;
the interruption rules of its getting-started CloudFormation. No CDK: the plan, the constructs
and the command read the same names.
"""

from __future__ import annotations

NODE_POOL_API = "karpenter.sh/v1"
NODE_CLASS_API = "karpenter.k8s.aws/v1"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_POOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
GPU_MANUFACTURER_LABEL = "karpenter.k8s.aws/instance-gpu-manufacturer"

# What a NodePool's template labels may not be. The API server's CEL rules
# (pkg/apis/crds/karpenter.sh_nodepools.yaml, spec.template.metadata.labels) refuse
# kubernetes.io/hostname, karpenter.sh/nodepool, and any key whose prefix ENDS WITH (a string
# suffix, not a subdomain) karpenter.sh or karpenter.k8s.aws unless listed below. The controller
# (kubernetes-sigs/karpenter pkg/apis/v1/nodepool_validation.go RuntimeValidate, with the
# provider's pkg/apis/v1/labels.go) also refuses karpenter.k8s.aws/ec2nodeclass.
KARPENTER_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
KARPENTER_RESTRICTED_LABELS = frozenset({"kubernetes.io/hostname", NODE_POOL_LABEL})
KARPENTER_ALLOWED_LABELS = frozenset(
    {CAPACITY_TYPE_LABEL, GPU_MANUFACTURER_LABEL}
    | {
        f"karpenter.k8s.aws/{name}"
        for name in (
            "instance-tenancy",
            "capacity-reservation-type",
            "capacity-reservation-id",
            "capacity-reservation-interruptible",
            "instance-encryption-in-transit-supported",
            "instance-category",
            "instance-hypervisor",
            "instance-family",
            "instance-generation",
            "instance-local-nvme",
            "instance-size",
            "instance-cpu",
            "instance-cpu-manufacturer",
            "instance-cpu-sustained-clock-speed-mhz",
            "instance-memory",
            "instance-ebs-bandwidth",
            "instance-network-bandwidth",
            "instance-gpu-name",
            "instance-gpu-count",
            "instance-gpu-memory",
            "instance-accelerator-name",
            "instance-accelerator-manufacturer",
            "instance-accelerator-count",
            "instance-capability-flex",
            "placement-group-id",
            "placement-group-partition",
        )
    }
)

# Construct id -> (event source, detail type), spelled as EventBridge delivers them. Karpenter
# drains the node on all but the rebalance recommendation, for which it only records an event.
INTERRUPTION_EVENTS = {
    "ScheduledChangeRule": ("aws.health", "AWS Health Event"),
    "SpotInterruptionRule": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "RebalanceRule": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "InstanceStateChangeRule": ("aws.ec2", "EC2 Instance State-change Notification"),
    "CapacityReservationInterruptionRule": (
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
    ),
}
MESSAGE_RETENTION_SECONDS = 300


def resource_name(pool_name: str) -> str:
    """The NodePool's and EC2NodeClass's name for a pool."""
    return f"gpu-pool-{pool_name}"


def karpenter_refuses(key: str) -> bool:
    """Whether Karpenter refuses `key` as a NodePool template label (the rules above)."""
    if key in KARPENTER_RESTRICTED_LABELS or key in KARPENTER_ALLOWED_LABELS:
        return key in KARPENTER_RESTRICTED_LABELS
    # CEL's x.find("^([^/]+)"): everything before the first "/", the whole key without one.
    head = key.partition("/")[0]
    return any(head.endswith(domain) for domain in KARPENTER_LABEL_DOMAINS)


# The instance types Karpenter has NVIDIA DRA device metadata for, the only ones it launches for
# a pod's gpu.nvidia.com claim ("Instance types absent from this map get no NVIDIA
# DynamicResources"): the keys of GPUMetadataByInstanceType in aws/karpenter-provider-aws
# pkg/providers/drametadata/zz_generated_gpu_metadata.go (stored version at commit
# 25682c4906fe80a6ed5c9ace36fceba65bc5c684), the same list as the "Supported Instance Types"
# table of karpenter.sh "Utilizing GPUs and EFAs with Dynamic Resource Allocation" (v1.15).
# "Support for a new instance type requires a new Karpenter release"; p6e-gb200 (UltraServers)
# is not in it, and Karpenter does not provision for ComputeDomains at all.
KARPENTER_DRA_INSTANCE_TYPES = frozenset(
    [f"g4dn.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")]
    + ["g4dn.metal"]
    + [
        f"{family}.{s}"
        for family in ("g5", "g6", "g6e")
        for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge")
    ]
    + ["g5.48xlarge", "g6.48xlarge", "g6e.48xlarge"]
    + [f"g5g.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "metal")]
    + [f"g6f.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge")]
    + ["gr6.4xlarge", "gr6.8xlarge", "gr6f.4xlarge", "p3dn.24xlarge"]
    + ["p4d.24xlarge", "p4de.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5e.48xlarge"]
    + ["p5en.48xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge"]
)
