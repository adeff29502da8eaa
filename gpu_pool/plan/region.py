"""What the stack's Region offers a pool, as looked up once and cached in cdk.context.json: the
zones that offer each instance type (EC2 DescribeInstanceTypeOfferings), whether each EKS
NVIDIA AMI type is published there (its public SSM parameter), and the account's EC2 vCPU
quotas for GPU instances there (Service Quotas).

The parameters (EKS user guide, "Retrieve recommended Amazon Linux AMI IDs" and "Retrieve
recommended Bottlerocket AMI IDs"):
`/aws/service/eks/optimized-ami/<minor>/amazon-linux-2023/<arch>/nvidia/recommended/image_id`
and `/aws/service/bottlerocket/aws-k8s-<minor>-nvidia/<arch>/latest/image_id`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_pool.plan.pool import PoolPlan, ami_type_for

# An EKS NVIDIA AMI type: <family>_<cpu>_NVIDIA (model/ami.py's nvidia_ami_type).
_AMI_TYPE = re.compile(r"^(?P<family>AL2023|BOTTLEROCKET)_(?P<cpu>x86_64|ARM_64)_NVIDIA$")
# The architecture as the SSM parameter paths spell it.
_ARCH = {"x86_64": "x86_64", "ARM_64": "arm64"}


@dataclass(frozen=True)
class RegionFacts:
    """The looked-up facts of `region`. A type or AMI type absent from them was not looked up
    (an environment-agnostic stack, or not cached yet): nothing is judged against it."""

    region: str
    # Instance type -> the zones of the Region that offer it (empty: none does).
    offerings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # EKS AMI type (AL2023_x86_64_NVIDIA, ...) -> whether the Region publishes it for the
    # cluster's minor.
    ami_types: Mapping[str, bool] = field(default_factory=dict)
    # EC2 vCPU quota code (model/quotas.py) -> its value for the stack's account, in vCPUs.
    vcpu_quotas: Mapping[str, float] = field(default_factory=dict)


def ami_parameter(ami_type: str, minor: str) -> str:
    """The public SSM parameter that holds the newest image of an EKS NVIDIA AMI type for a
    Kubernetes minor: it exists exactly where EKS publishes that AMI type."""
    match = _AMI_TYPE.match(ami_type)
    if match is None:
        raise ValueError(f"not an EKS NVIDIA AMI type: {ami_type}")
    arch = _ARCH[match["cpu"]]
    if match["family"] == "AL2023":
        return (
            f"/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/{arch}/nvidia/"
            "recommended/image_id"
        )
    return f"/aws/service/bottlerocket/aws-k8s-{minor}-nvidia/{arch}/latest/image_id"


def pool_ami_types(plan: PoolPlan) -> list[str]:
    """The EKS AMI types the pool's nodes boot, in order of first use: its node groups', or a
    Karpenter pool's per architecture (its AMI alias resolves the same EKS images). None for
    Auto Mode, where EKS chooses the image."""
    if plan.karpenter is not None:
        types = [ami_type_for(plan.settings, t.architecture) for g in plan.entries for t in g]
    else:
        types = [group.ami_type for group in plan.node_groups]
    return list(dict.fromkeys(types))


def pool_instance_types(plan: PoolPlan) -> list[str]:
    """The pool's instance type names, in order of first mention."""
    return list(dict.fromkeys(t.name for group in plan.entries for t in group))
