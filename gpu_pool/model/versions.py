"""Every pinned version gpu-pool deploys: Kubernetes releases, kubectl layers, charts, images.

One place, so an upgrade is one reviewed diff. Each pin names its source. The aws-cdk-lib and
CDK CLI pins live in requirements.txt and package.json, which their tools read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

# What a pin or a version override must look like: an exact release, never a range or `latest`.
EXACT_VERSION = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+$")


@dataclass(frozen=True)
class KubernetesRelease:
    """What gpu-pool needs to know about one Kubernetes minor on EKS."""

    minor: str
    # PyPI package `aws-cdk.lambda-layer-kubectl-vNN` and its layer class: kubectl supports one
    # minor of skew, so the layer must match the cluster's minor.
    kubectl_layer_module: str
    kubectl_layer_class: str
    # Last day EKS creates clusters of this minor (end of extended support), from the EKS
    # Kubernetes version calendar (EKS user guide, "Kubernetes version lifecycle").
    eks_creates_until: date
    # registry.k8s.io/autoscaling/cluster-autoscaler tag whose minor equals the cluster's.
    # None: no tag verified for this minor; enabling the autoscaler on it is a synth error.
    cluster_autoscaler_image_tag: str | None


KUBERNETES_RELEASES: dict[str, KubernetesRelease] = {
    # EKS stopped creating 1.29 clusters on 2026-03-23; kept selectable (the original design
    # named KubectlV29Layer) with a synth warning.
    "1.29": KubernetesRelease(
        "1.29",
        "aws_cdk.lambda_layer_kubectl_v29",
        "KubectlV29Layer",
        date(2026, 3, 23),
        None,
    ),
    # Past extended support too (EKS calendar: 1.30 until 2026-07-23, 1.31 until 2026-11-26),
    # but EKS upgrades such clusters at a time of its choosing, so an existing cluster looked up
    # may still run them: layers PyPI aws-cdk.lambda-layer-kubectl-v30 2.0.4 and -v31 2.1.0.
    # CA: 1.31.5 is the last 1.31 patch (kubernetes/autoscaler#8637, the 2025-09 round of
    # #8568 for 1.31-1.33; later rounds start at 1.32); no 1.30 tag could be verified here.
    "1.30": KubernetesRelease(
        "1.30",
        "aws_cdk.lambda_layer_kubectl_v30",
        "KubectlV30Layer",
        date(2026, 7, 23),
        None,
    ),
    "1.31": KubernetesRelease(
        "1.31",
        "aws_cdk.lambda_layer_kubectl_v31",
        "KubectlV31Layer",
        date(2026, 11, 26),
        "v1.31.5",
    ),
    # CA 1.32.5: promoted in kubernetes/k8s.io#8815.
    "1.32": KubernetesRelease(
        "1.32",
        "aws_cdk.lambda_layer_kubectl_v32",
        "KubectlV32Layer",
        date(2027, 3, 23),
        "v1.32.5",
    ),
    # CA tags 1.33..1.35: kubernetes/autoscaler tags cluster-autoscaler-1.33.6, -1.34.5, -1.35.2.
    "1.33": KubernetesRelease(
        "1.33",
        "aws_cdk.lambda_layer_kubectl_v33",
        "KubectlV33Layer",
        date(2027, 7, 29),
        "v1.33.6",
    ),
    "1.34": KubernetesRelease(
        "1.34",
        "aws_cdk.lambda_layer_kubectl_v34",
        "KubectlV34Layer",
        date(2027, 12, 2),
        "v1.34.5",
    ),
    "1.35": KubernetesRelease(
        "1.35",
        "aws_cdk.lambda_layer_kubectl_v35",
        "KubectlV35Layer",
        date(2028, 3, 27),
        "v1.35.2",
    ),
    # Layer: PyPI aws-cdk.lambda-layer-kubectl-v36 2.0.1. CA: tag cluster-autoscaler-1.36.1
    # (kubernetes/autoscaler, 2026-07-22). EKS's calendar date for 1.36 was not readable here:
    # its docs name 1.36 as the current minor; 26 months of support from mid-2026 is assumed.
    "1.36": KubernetesRelease(
        "1.36",
        "aws_cdk.lambda_layer_kubectl_v36",
        "KubectlV36Layer",
        date(2028, 8, 1),
        "v1.36.1",
    ),
}

# The newest minor in EKS standard support (1.35's ends 2027-03-27; 1.36 is newer).
DEFAULT_KUBERNETES_VERSION = "1.36"


@dataclass(frozen=True)
class ChartPin:
    """A Helm chart from its upstream repository, at a fixed version."""

    chart: str
    repository: str
    version: str
    namespace: str


# NVIDIA/k8s-device-plugin releases (its GitHub releases and chart index); 0.20.0 is 2026-08.
NVIDIA_DEVICE_PLUGIN = ChartPin(
    chart="nvidia-device-plugin",
    repository="https://nvidia.github.io/k8s-device-plugin",
    version="0.20.0",
    namespace="kube-system",
)

# NVIDIA GPU Operator on NGC; v26.3.1 is the 2026 stable line (NVIDIA/gpu-operator releases).
NVIDIA_GPU_OPERATOR = ChartPin(
    chart="gpu-operator",
    repository="https://helm.ngc.nvidia.com/nvidia",
    version="v26.3.1",
    namespace="gpu-operator",
)

# The DRA Driver for NVIDIA GPUs, moved from NVIDIA/k8s-dra-driver-gpu (last chart there:
# nvidia-dra-driver-gpu 25.12.0) to kubernetes-sigs/dra-driver-nvidia-gpu: tag v0.4.1 (commit
# 764900e7), deployments/helm/dra-driver-nvidia-gpu/Chart.yaml (version 0.4.1, image
# registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1 in values.yaml), published to
# the OCI registry of docs/install.md. Release and namespace keep the 25.12.0 install's names,
# as the repository's docs/upgrade.md upgrades it in place ("helm upgrade -i
# nvidia-dra-driver-gpu ... --namespace nvidia-dra-driver-gpu"); the chart refuses the `default`
# namespace (templates/validation.yaml).
NVIDIA_DRA_DRIVER = ChartPin(
    chart="dra-driver-nvidia-gpu",
    repository="oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
    version="0.4.1",
    namespace="nvidia-dra-driver-gpu",
)

# NVIDIA/dcgm-exporter deployment/Chart.yaml at tag 4.5.3-4.8.2: chart 4.8.2, image
# 4.5.3-4.8.2-distroless; repository from its README ("helm repo add gpu-helm-charts").
DCGM_EXPORTER = ChartPin(
    chart="dcgm-exporter",
    repository="https://nvidia.github.io/dcgm-exporter/helm-charts",
    version="4.8.2",
    namespace="kube-system",
)

# The amazon-cloudwatch-observability EKS add-on (metrics.gpu: cloudwatch): the build of Helm
# chart 6.4.0 (aws-observability/helm-charts, tag amazon-cloudwatch-observability-6.4.0,
# 2026-07-21); an add-on version is its chart's with an -eksbuild suffix (the repository's
# RELEASE_NOTES: "CloudWatch Agent Addon to v3.7.0-eksbuild.1"). Pinned because the add-on's
# configuration schema and its DCGM exporter's instance-type list are per version: what
# plan/metrics.py sends and checks was read from this chart.
CLOUDWATCH_OBSERVABILITY_ADDON_VERSION = "v6.4.0-eksbuild.1"

# The eks-node-monitoring-agent EKS add-on (node health and repair, docs/gpu-health.md): the
# agent's release 1.7.0 (aws/eks-node-monitoring-agent, tag v1.7.0, commit c399089, released
# 2026-08-04), whose chart (charts/eks-node-monitoring-agent/values.yaml:32) runs the image
# eks-node-monitoring-agent:v1.7.0-eksbuild.1, the EKS build an add-on version names.
# Pinned because its configuration schema is per version:
# plan/repair.py's configuration values are checked against the 1.7.0 schema
# (charts/configuration.schema.json, vendored in tests/fixtures).
NODE_MONITORING_AGENT_ADDON_VERSION = "v1.7.0-eksbuild.1"

# kubernetes/autoscaler charts/cluster-autoscaler/Chart.yaml, version 9.59.0.
CLUSTER_AUTOSCALER = ChartPin(
    chart="cluster-autoscaler",
    repository="https://kubernetes.github.io/autoscaler",
    version="9.59.0",
    namespace="kube-system",
)


def version_key(version: str) -> tuple[int, ...]:
    """A version's numbers, for comparing: `v1.14.1` -> (1, 14, 1) (ValueError if not one)."""
    return tuple(int(part) for part in version.lstrip("v").split("."))


def minor_key(minor: str) -> tuple[int, int] | None:
    """A Kubernetes minor's numbers, for comparing: `1.35` -> (1, 35); None if it is not one
    (the app's own rule names that, GP-APP-01)."""
    major, dot, number = minor.partition(".")
    return (int(major), int(number)) if dot and major.isdigit() and number.isdigit() else None


def autoscaler_image_tag(minor: str) -> str | None:
    """The pinned Cluster Autoscaler image for a Kubernetes minor, if there is one."""
    release = KUBERNETES_RELEASES.get(minor)
    return release.cluster_autoscaler_image_tag if release is not None else None


# Karpenter (aws/karpenter-provider-aws). Both charts are published per release to public ECR
# as OCI artifacts. 1.15.0 is the newest release whose files could be read and verified: the
# release commit d77d1a3a5a44d7ce9c041bcc51da1e567de3f2ec sets charts/karpenter/Chart.yaml and
# charts/karpenter-crd/Chart.yaml to version 1.15.0 and values.yaml's controller image to tag
# 1.15.0 (digest sha256:ab0f953e...); its website/content/en/v1.15 pages install
# KARPENTER_VERSION="1.15.0". Patches 1.15.1 and 1.15.2 are reported but their files were not
# readable here. 1.15 is the first release with the AWS DRA support (settings.enableDRA). The
# CRD chart goes first: Helm installs a chart's bundled CRDs once and never upgrades them.
KARPENTER = ChartPin(
    chart="karpenter",
    repository="oci://public.ecr.aws/karpenter/karpenter",
    version="1.15.0",
    namespace="kube-system",
)
KARPENTER_CRD = ChartPin(
    chart="karpenter-crd",
    repository="oci://public.ecr.aws/karpenter/karpenter-crd",
    version="1.15.0",
    namespace="kube-system",
)

# The oldest Karpenter that supports each Kubernetes minor: the compatibility matrix in
# website/content/en/v1.15/upgrading/compatibility.md (it starts at 1.31 there; 1.30's entry
# is from the v1.14 page, and 1.37, which needs 1.15.x, is not a minor gpu-pool offers).
KARPENTER_MIN_VERSION = {
    "1.30": "0.37.0",
    "1.31": "1.0.5",
    "1.32": "1.2.0",
    "1.33": "1.5.0",
    "1.34": "1.6.0",
    "1.35": "1.9.0",
    "1.36": "1.13.0",
}

# EC2NodeClass `amiSelectorTerms` aliases, one pinned release per AMI family: Karpenter picks
# the NVIDIA variant for GPU types itself. Upstream advises against @latest (every AMI release
# would replace every node). AL2023: AMI release v20260714 (awslabs/amazon-eks-ami CHANGELOG,
# with Kubernetes 1.36 images). Bottlerocket: v1.66.0 (bottlerocket-os/bottlerocket#4946,
# 2026-09, aws-k8s-1.33 .. 1.37 -nvidia variants).
KARPENTER_AMI_ALIASES = {
    "AL2023": "al2023@v20260714",
    "BOTTLEROCKET": "bottlerocket@v1.66.0",
}

# The oldest Karpenter with each feature a training pool needs. Reserved capacity: ODCRs from
# v1.3 behind the ReservedCapacity feature gate (alpha, off), on by default with Capacity Blocks
# from v1.6 (website/content/en/docs/tasks/odcrs.md and reference/settings.md, "Feature
# Gates", at v1.14.1). EFA placement: EC2NodeClass placementGroupSelector from v1.11.0
# (aws/karpenter-provider-aws#9030, first tagged in v1.11.0).
KARPENTER_RESERVED_CAPACITY_SINCE = "1.6.0"
KARPENTER_PLACEMENT_GROUP_SINCE = "1.11.0"
# Dynamic provisioning for DRA claims (the chart's settings.enableDRA, the DRANVIDIAGPU and
# DRAEFA AWS feature gates): from v1.15.0 (charts/karpenter/values.yaml at the release commit
# above; karpenter.sh "Utilizing GPUs and EFAs with Dynamic Resource Allocation"). Earlier
# releases ignore a pod's ResourceClaims when they size nodes (ignoreDRARequests true).
KARPENTER_DRA_SINCE = "1.15.0"

# aws/eks-charts stable/aws-efa-k8s-device-plugin/Chart.yaml (master, 2026-08-03): version
# v0.5.30 (spelled with its v), image v0.5.20. Its default tolerations are CriticalAddonsOnly
# only (the GPU pools' taints are added per pool); its required affinity lists the EFA instance
# types (values.yaml supportedInstanceLabels), every EFA type of the GPU catalog included.
EFA_DEVICE_PLUGIN = ChartPin(
    chart="aws-efa-k8s-device-plugin",
    repository="https://aws.github.io/eks-charts",
    version="v0.5.30",
    namespace="kube-system",
)

# aws/eks-charts stable/aws-dranet/Chart.yaml (master at 5239609, the chart last changed
# 2026-04-30 in c043cef): version 1.0.0, image v1.2.0-eksbuild.2. The EFA DRA driver (DRANET,
# driver `dra.net`, DeviceClass efa.networking.k8s.aws from templates/deviceclass.yaml),
# installed in kube-system as the chart's README and the EKS UG's "Manage EFA devices on Amazon
# EKS" do. Its default tolerations are CriticalAddonsOnly only (templates/daemonset.yaml), and
# its required affinity is one term per values.yaml supportedInstanceLabels key, each also
# excluding Auto Mode nodes (eks.amazonaws.com/compute-type NotIn auto).
AWS_DRANET = ChartPin(
    chart="aws-dranet",
    repository="https://aws.github.io/eks-charts",
    version="1.0.0",
    namespace="kube-system",
)
