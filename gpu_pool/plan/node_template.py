"""What a GPU node looks like to Kubernetes, and to Cluster Autoscaler at zero nodes.

Labels and taints go on the managed node group (EKS API spelling); the same facts go on its ASG
as Cluster Autoscaler node-template tags (Kubernetes spelling, formats in model/labels.py), the
only thing it can read while the group has no nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpu_pool.model.catalog import GpuInstanceType
from gpu_pool.model.labels import (
    ACCELERATOR_LABEL,
    GPU_PRESENT_LABEL,
    LABEL_TAG_PREFIX,
    OPERANDS_LABEL,
    POOL_LABEL,
    RESOURCE_TAG_PREFIX,
    TAINT_TAG_PREFIX,
)
from gpu_pool.settings import Taint

# The EFA device plugin's resource (aws/eks-charts aws-efa-k8s-device-plugin).
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# The 2 MiB hugepages an EFA node reserves at boot. AL2023: the EFA installer's 5128 pages
# (EKS UG ml/node-efa). Bottlerocket: 110 per vCPU, which its settings generator writes to
# vm.nr_hugepages when an EFA device is attached (bottlerocket-os/bottlerocket-core-kit
# sources/api/corndog/src/main.rs, HUGEPAGES_2MB_PER_CORE times num_cpus::get(), the logical
# CPUs): 21120 pages on a 192-vCPU p5.48xlarge.
AL2023_EFA_HUGEPAGES = 5128
BOTTLEROCKET_EFA_HUGEPAGES_PER_VCPU = 110


def gpu_model_label(instance_types: Sequence[GpuInstanceType]) -> str:
    """The accelerator label value: the GPU model, or `nvidia-mixed` for a mixed-model group."""
    models = {t.family.gpu_model for t in instance_types}
    return models.pop() if len(models) == 1 else "nvidia-mixed"


def node_labels(
    pool_name: str,
    pool_labels: Mapping[str, str],
    instance_types: Sequence[GpuInstanceType],
    gpu_software: str,
) -> dict[str, str]:
    """The pool's labels plus those that make the GPU tooling work.

    Every node names its pool and carries `nvidia.com/gpu.present`; nodes of a pool that does
    not use the GPU Operator also opt out of the operator's operands. Cluster Autoscaler's GPU
    label (k8s.amazonaws.com/accelerator) goes on every node but a DRA driver's: CA on AWS
    takes a node with that label and no nvidia.com/gpu allocatable for one whose GPU driver is
    still starting and counts it unready (kubernetes/autoscaler cluster-autoscaler-1.36.1
    processors/customresources/gpu_processor.go:53-56, the same lines at 1.35.2 and :52-55 at
    1.34.5). Its DRA exemption (gpuExposedViaDra, :132) needs the provider's
    GpuConfig.DraDriverName, which only GCE sets (cloudprovider/gce/gce_cloud_provider.go:104),
    so with the label every DRA node would stay unready to CA for good.
    """
    labels = {**pool_labels, POOL_LABEL: pool_name, GPU_PRESENT_LABEL: "true"}
    if gpu_software != "dra-driver":
        labels[ACCELERATOR_LABEL] = gpu_model_label(instance_types)
    if gpu_software != "gpu-operator":
        labels[OPERANDS_LABEL] = "false"
    return labels


def efa_hugepages_mib(ami_type: str, instance_types: Sequence[GpuInstanceType]) -> int:
    """The MiB of 2 MiB hugepages every EFA node of a group of these types reserves: by its
    AMI, on Bottlerocket for the fewest vCPUs among the types (CA's template is one node)."""
    if ami_type.startswith("BOTTLEROCKET"):
        pages = BOTTLEROCKET_EFA_HUGEPAGES_PER_VCPU * min(t.vcpus for t in instance_types)
    else:
        pages = AL2023_EFA_HUGEPAGES
    return pages * 2


def node_template_tags(
    labels: Mapping[str, str],
    taints: Sequence[Taint],
    gpu_resources: Mapping[str, int],
    ephemeral_storage: str,
    efa_interfaces: int,
    efa_hugepages_mib: int,
) -> dict[str, str]:
    """The ASG tags Cluster Autoscaler builds a zero-node group's template from: the GPU
    resources a node advertises (nvidia.com/gpu, or its shares), its ephemeral storage (a
    quantity: the EBS volume, or the RAID0 instance store kubelet runs on), labels and taints;
    an EFA node also advertises its EFA interfaces and the hugepages its AMI reserves for EFA
    (`efa_hugepages_mib`), which EFA pods request (EKS UG ml/node-efa), or CA would never scale
    such a group up from zero."""
    tags = {f"{RESOURCE_TAG_PREFIX}{name}": str(count) for name, count in gpu_resources.items()}
    tags[f"{RESOURCE_TAG_PREFIX}ephemeral-storage"] = ephemeral_storage
    if efa_interfaces:
        tags[f"{RESOURCE_TAG_PREFIX}{EFA_RESOURCE}"] = str(efa_interfaces)
        tags[f"{RESOURCE_TAG_PREFIX}hugepages-2Mi"] = f"{efa_hugepages_mib}Mi"
    tags.update({f"{LABEL_TAG_PREFIX}{k}": v for k, v in labels.items()})
    tags.update({f"{TAINT_TAG_PREFIX}{t.key}": t.template_tag_value() for t in taints})
    return tags
