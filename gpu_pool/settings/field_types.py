"""The value types the settings sections share: names AWS and Kubernetes accept (an account,
a Region, a stack name, a pool's name, an instance type, a subnet id), durations, and the
choices of several sections."""

from __future__ import annotations

from typing import Annotated, Literal

from gpu_pool.model.aws_names import REGION
from gpu_pool.settings.errors import matching

# AWS names, each a pattern and what would be valid: every settings model that takes one (the
# document's and the pipeline's).
ACCOUNT_ID = (r"^[0-9]{12}$", "a 12-digit AWS account id")
REGION_NAME = (REGION, "an AWS region name such as us-east-1")
STACK_NAME = (
    r"^[A-Za-z][A-Za-z0-9-]{0,127}$",
    "a CloudFormation stack name: a letter, then up to 127 letters, digits or '-'",
)

TaintEffect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]
AmiFamily = Literal["AL2023", "BOTTLEROCKET"]
NvidiaAmiType = Literal[
    "AL2023_x86_64_NVIDIA",
    "AL2023_ARM_64_NVIDIA",
    "BOTTLEROCKET_x86_64_NVIDIA",
    "BOTTLEROCKET_ARM_64_NVIDIA",
]
GpuSoftware = Literal["device-plugin", "gpu-operator", "dra-driver", "none"]
Provisioner = Literal["cluster-autoscaler", "karpenter", "auto-mode"]
SubnetId = Annotated[
    str,
    matching(
        r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", "a subnet id (subnet- and 8 or 17 hex digits)"
    ),
]
# A Go duration as Cluster Autoscaler parses its flags: 10m, 90s, 1m30s, 1.5h.
Duration = Annotated[
    str,
    matching(
        r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$",
        "a duration Cluster Autoscaler takes, such as 10m, 90s or 1m30s",
    ),
]
# family.size with an EC2 size word: t3.medium, m7g.2xlarge, c6i.metal, u-6tb1.metal-24xl.
InstanceTypeName = Annotated[
    str,
    matching(
        r"^[a-z][a-z0-9-]*\.(nano|micro|small|medium|large|xlarge|[0-9]+xlarge|metal"
        r"(-[0-9]+xl)?)$",
        "an EC2 instance type: family.size, e.g. t3.medium (sizes nano, micro, small, medium, "
        "large, xlarge, 2xlarge ... , metal)",
    ),
]
# A pool's name: in its device plugin's Helm release name (helm pkg/chartutil/validate_name.go:
# [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 53 characters, and "nvidia-device-plugin-" takes 21),
# its node label's value (a Kubernetes label value ends in a letter or digit), its Karpenter
# NodePool's name and its construct ids.
PoolName = Annotated[
    str,
    matching(
        r"^[a-z]([a-z0-9-]{0,19}[a-z0-9])?$",
        "a pool name: a lowercase letter, then up to 20 lowercase letters, digits or '-', "
        "ending in a letter or digit (it names a Helm release and is a label value)",
    ),
]
