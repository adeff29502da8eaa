"""The EKS NVIDIA AMIs: their type names and where each family keeps container images."""

from __future__ import annotations

from gpu_pool.model.catalog import Architecture

# The volume that holds container images, sized by disk_size_gib: AL2023's root, Bottlerocket's
# data volume (its root /dev/xvda is the small OS image).
IMAGE_VOLUME = {"AL2023": "/dev/xvda", "BOTTLEROCKET": "/dev/xvdb"}


def nvidia_ami_type(family: str, architecture: Architecture) -> str:
    """The EKS AMI type of `family` (AL2023, BOTTLEROCKET) for a CPU: AL2023_x86_64_NVIDIA, ..."""
    cpu = "x86_64" if architecture is Architecture.X86_64 else "ARM_64"
    return f"{family}_{cpu}_NVIDIA"
