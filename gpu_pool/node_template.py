"""What a GPU node looks like to Kubernetes and to Cluster Autoscaler at zero nodes.

Labels and taints go on the managed node group (EKS API spelling); the same facts go on its ASG
as Cluster Autoscaler node-template tags (Kubernetes spelling), the only thing it can read while
the group has no nodes. Formats follow cluster-autoscaler/cloudprovider/aws (../shared/FACTS.md):
  k8s.io/cluster-autoscaler/node-template/label/<name>      = <value>
  k8s.io/cluster-autoscaler/node-template/taint/<key>       = <value>:<Effect>
  k8s.io/cluster-autoscaler/node-template/resources/<name>  = <quantity>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpu_pool.catalog import GpuInstanceType
from gpu_pool.settings import Taint

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
# Cluster Autoscaler's AWS GPU label: a node with it but no allocatable GPU yet counts as not
# ready, so CA waits for the device plugin instead of launching a second node.
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
# Names the pool a node belongs to: the device plugin of that pool, and only it, selects it.
POOL_LABEL = "gpu-pool.io/pool"
# The GPU Operator's opt-out: no operand (device plugin included) is deployed on such a node.
OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"
# Labels gpu-pool sets itself; a pool label may not use these keys.
RESERVED_LABELS = (POOL_LABEL, GPU_PRESENT_LABEL, ACCELERATOR_LABEL, OPERANDS_LABEL)

DISCOVERY_ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"
LABEL_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/taint/"
RESOURCE_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/resources/"

# The volume that holds container images, sized by disk_size_gib: AL2023's root, Bottlerocket's
# data volume (its root /dev/xvda is the small OS image).
IMAGE_VOLUME = {"AL2023": "/dev/xvda", "BOTTLEROCKET": "/dev/xvdb"}

EKS_TAINT_EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
}


def discovery_tag(cluster_name: str) -> str:
    return f"k8s.io/cluster-autoscaler/{cluster_name}"


def gpu_model_label(instance_types: Sequence[GpuInstanceType]) -> str:
    """The accelerator label value: the GPU model, or `nvidia-mixed` for a mixed-model group."""
    models = {t.family.gpu_model for t in instance_types}
    return models.pop() if len(models) == 1 else "nvidia-mixed"


def node_labels(
    pool_name: str,
    pool_labels: Mapping[str, str],
    instance_types: Sequence[GpuInstanceType],
    gpu_operator: bool,
) -> dict[str, str]:
    """The pool's labels plus those that make the GPU tooling work.

    Every node names its pool and carries the two GPU labels; nodes of a pool that does not use
    the GPU Operator also opt out of the operator's operands.
    """
    labels = {
        **pool_labels,
        POOL_LABEL: pool_name,
        GPU_PRESENT_LABEL: "true",
        ACCELERATOR_LABEL: gpu_model_label(instance_types),
    }
    if not gpu_operator:
        labels[OPERANDS_LABEL] = "false"
    return labels


def eks_taints(taints: Sequence[Taint]) -> list[dict[str, str]]:
    """Taints as AWS::EKS::Nodegroup takes them (effect NO_SCHEDULE, ...)."""
    result = []
    for taint in taints:
        entry = {"key": taint.key, "effect": EKS_TAINT_EFFECTS[taint.effect]}
        if taint.value:
            entry["value"] = taint.value
        result.append(entry)
    return result


def node_template_tags(
    labels: Mapping[str, str],
    taints: Sequence[Taint],
    gpu_count: int,
    disk_size_gib: int,
) -> dict[str, str]:
    """The ASG tags Cluster Autoscaler builds a zero-node group's template from."""
    tags = {
        f"{RESOURCE_TAG_PREFIX}{GPU_RESOURCE}": str(gpu_count),
        f"{RESOURCE_TAG_PREFIX}ephemeral-storage": f"{disk_size_gib}Gi",
    }
    tags.update({f"{LABEL_TAG_PREFIX}{k}": v for k, v in labels.items()})
    tags.update({f"{TAINT_TAG_PREFIX}{t.key}": f"{t.value}:{t.effect}" for t in taints})
    return tags


def discovery_tags(cluster_name: str) -> dict[str, str]:
    """The tags CA's --node-group-auto-discovery finds a cluster's groups by."""
    return {DISCOVERY_ENABLED_TAG: "true", discovery_tag(cluster_name): "owned"}
