"""Labels and tags gpu-pool agrees on with the systems that read them.

Node labels the device plugin, Cluster Autoscaler, Karpenter and the GPU Operator read, and the
ASG tag formats Cluster Autoscaler builds a zero-node group's template from
(cluster-autoscaler/cloudprovider/aws, aws_manager.go):
  k8s.io/cluster-autoscaler/node-template/label/<name>      = <value>
  k8s.io/cluster-autoscaler/node-template/taint/<key>       = <value>:<Effect>
  k8s.io/cluster-autoscaler/node-template/resources/<name>  = <quantity>
"""

from __future__ import annotations

GPU_RESOURCE = "nvidia.com/gpu"
# What time-sliced GPUs are advertised as with renameByDefault (NVIDIA/k8s-device-plugin README,
# "Shared Access to GPUs").
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
# The device plugin's config-manager picks the named config of its ConfigMap by this node label;
# the GPU Operator's MIG manager partitions a node's GPUs by the MIG configuration it names.
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
# Cluster Autoscaler's AWS GPU label: a node with it but no allocatable GPU yet counts as not
# ready, so CA waits for the device plugin instead of launching a second node.
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
# Names the pool a node belongs to: the device plugin of that pool, and only it, selects it.
POOL_LABEL = "gpu-pool.io/pool"
# The GPU Operator's opt-out: no operand (device plugin included) is deployed on such a node.
OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"
# Labels gpu-pool sets itself; a pool label may not use these keys.
RESERVED_LABELS = (
    POOL_LABEL,
    GPU_PRESENT_LABEL,
    ACCELERATOR_LABEL,
    OPERANDS_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    MIG_CONFIG_LABEL,
)

# Kubernetes' well-known node labels (kubernetes.io/docs/reference/labels-annotations-taints).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ARCH_LABEL = "kubernetes.io/arch"
ZONE_LABEL = "topology.kubernetes.io/zone"

# The kubelet refuses to start when --node-labels holds a kubernetes.io or k8s.io label outside
# these namespaces (and their subdomains) and labels (kubernetes cmd/kubelet/app/options/
# options.go ValidateKubeletFlags; staging/src/k8s.io/api/core/v1/well_known_labels.go).
KUBERNETES_LABEL_NAMESPACES = ("kubernetes.io", "k8s.io")
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        INSTANCE_TYPE_LABEL,
        ZONE_LABEL,
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)


def mig_resource(profile: str) -> str:
    """The resource a MIG profile is advertised as with migStrategy mixed: nvidia.com/mig-1g.10gb,
    `+` made `.` (NVIDIA/k8s-device-plugin v0.20.0 internal/rm/rm.go)."""
    return "nvidia.com/mig-" + profile.replace("+", ".")


def label_namespace(key: str) -> str:
    """The prefix before the first `/`; empty for an unprefixed key."""
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def within(namespace: str, parent: str) -> bool:
    """`namespace` is `parent` or one of its subdomains."""
    return namespace == parent or namespace.endswith("." + parent)


def kubelet_refuses(key: str) -> bool:
    """Whether the kubelet refuses `key` in --node-labels (it then never starts)."""
    namespace = label_namespace(key)
    return (
        any(within(namespace, n) for n in KUBERNETES_LABEL_NAMESPACES)
        and key not in KUBELET_LABELS
        and not any(within(namespace, n) for n in KUBELET_LABEL_NAMESPACES)
    )


DISCOVERY_ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"
NODE_TEMPLATE_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/"
LABEL_TAG_PREFIX = f"{NODE_TEMPLATE_TAG_PREFIX}label/"
TAINT_TAG_PREFIX = f"{NODE_TEMPLATE_TAG_PREFIX}taint/"
RESOURCE_TAG_PREFIX = f"{NODE_TEMPLATE_TAG_PREFIX}resources/"


def discovery_tag(cluster_name: str) -> str:
    return f"k8s.io/cluster-autoscaler/{cluster_name}"


def discovery_tags(cluster_name: str) -> dict[str, str]:
    """The tags CA's --node-group-auto-discovery finds a cluster's groups by."""
    return {DISCOVERY_ENABLED_TAG: "true", discovery_tag(cluster_name): "owned"}
