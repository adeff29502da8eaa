"""The EKS add-on versions a cluster needs before EKS Auto Mode is enabled on it in place.

EKS user guide, "Enable EKS Auto Mode on an existing cluster", section "Required add-on
versions" (awsdocs/amazon-eks-user-guide, latest/ug/automode/auto-enable-existing.adoc): an
add-on that is installed must be at least this version. kube-proxy's minimum is per Kubernetes
minor; the guide lists 1.25 to 1.31, and every kube-proxy build of a later minor came after
Auto Mode (released with 1.31), so later minors have no minimum to meet.
"""

from __future__ import annotations

import re

# EKS add-on name -> the guide's name for it and its minimum version.
AUTO_MODE_ADDON_MINIMUMS: dict[str, tuple[str, str]] = {
    "vpc-cni": ("Amazon VPC CNI plugin for Kubernetes", "v1.19.0-eksbuild.1"),
    "aws-ebs-csi-driver": ("Amazon EBS CSI driver", "v1.37.0-eksbuild.1"),
    "snapshot-controller": ("CSI snapshot controller", "v8.1.0-eksbuild.2"),
    "eks-pod-identity-agent": ("EKS Pod Identity Agent", "v1.3.4-eksbuild.1"),
}
KUBE_PROXY = "kube-proxy"
# Every cluster runs these, as EKS add-ons or, on a cluster created with EKS's default
# bootstrapSelfManagedAddons (as aws-cdk-lib creates it), self-managed: when DescribeAddon
# knows none, their version is still to be checked.
ALWAYS_RUNNING = ("vpc-cni", KUBE_PROXY)
KUBE_PROXY_MINIMUMS: dict[str, str] = {
    "1.25": "v1.25.16-eksbuild.22",
    "1.26": "v1.26.15-eksbuild.19",
    "1.27": "v1.27.16-eksbuild.14",
    "1.28": "v1.28.15-eksbuild.4",
    "1.29": "v1.29.10-eksbuild.3",
    "1.30": "v1.30.6-eksbuild.3",
    "1.31": "v1.31.2-eksbuild.3",
}
_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.(\d+)$")


def addon_minimum(addon: str, kubernetes_minor: str) -> str | None:
    """The minimum version of `addon` on a cluster of this minor; None: no minimum."""
    if addon == KUBE_PROXY:
        return KUBE_PROXY_MINIMUMS.get(kubernetes_minor)
    entry = AUTO_MODE_ADDON_MINIMUMS.get(addon)
    return entry[1] if entry else None


def below_minimum(version: str, minimum: str) -> bool | None:
    """Whether an EKS add-on version (v1.19.0-eksbuild.1) is older than `minimum`; None for
    a version of another shape, which cannot be judged (the caller says so)."""
    have, need = _VERSION.match(version), _VERSION.match(minimum)
    if have is None or need is None:
        return None
    return tuple(map(int, have.groups())) < tuple(map(int, need.groups()))


def minimums_table() -> list[str]:
    """The guide's table as lines to print."""
    lines = [
        f"  {name} ({addon}): {minimum}"
        for addon, (name, minimum) in AUTO_MODE_ADDON_MINIMUMS.items()
    ]
    lines.append(
        "  kube-proxy (kube-proxy): "
        + ", ".join(f"{minor}: {v}" for minor, v in KUBE_PROXY_MINIMUMS.items())
        + "; later minors: any"
    )
    return lines
