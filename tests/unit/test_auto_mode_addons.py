"""The add-on minimums for enabling EKS Auto Mode in place, as the EKS user guide lists them."""

from __future__ import annotations

import pytest

from gpu_pool.model.auto_mode_addons import addon_minimum, below_minimum, minimums_table


@pytest.mark.parametrize(
    ("version", "minimum", "older"),
    [
        ("v1.18.5-eksbuild.1", "v1.19.0-eksbuild.1", True),
        ("v1.19.0-eksbuild.1", "v1.19.0-eksbuild.1", False),
        ("v1.19.0-eksbuild.2", "v1.19.0-eksbuild.3", True),
        ("v1.20.0-eksbuild.1", "v1.19.0-eksbuild.1", False),
        # Compared as numbers, not text: 1.3.10 is newer than 1.3.4.
        ("v1.3.10-eksbuild.1", "v1.3.4-eksbuild.1", False),
        # Another shape cannot be judged: None, which the command reports as unverified.
        ("1.19.0", "v1.19.0-eksbuild.1", None),
    ],
)
def test_below_minimum_compares_versions_and_builds_as_numbers(version, minimum, older):
    assert below_minimum(version, minimum) is older


def test_kube_proxys_minimum_is_per_minor_and_later_minors_have_none():
    assert addon_minimum("kube-proxy", "1.31") == "v1.31.2-eksbuild.3"
    assert addon_minimum("kube-proxy", "1.36") is None
    assert addon_minimum("vpc-cni", "1.36") == "v1.19.0-eksbuild.1"
    assert addon_minimum("coredns", "1.36") is None


def test_the_table_names_every_add_on_of_the_guide():
    assert minimums_table() == [
        "  Amazon VPC CNI plugin for Kubernetes (vpc-cni): v1.19.0-eksbuild.1",
        "  Amazon EBS CSI driver (aws-ebs-csi-driver): v1.37.0-eksbuild.1",
        "  CSI snapshot controller (snapshot-controller): v8.1.0-eksbuild.2",
        "  EKS Pod Identity Agent (eks-pod-identity-agent): v1.3.4-eksbuild.1",
        "  kube-proxy (kube-proxy): 1.25: v1.25.16-eksbuild.22, 1.26: v1.26.15-eksbuild.19, "
        "1.27: v1.27.16-eksbuild.14, 1.28: v1.28.15-eksbuild.4, 1.29: v1.29.10-eksbuild.3, "
        "1.30: v1.30.6-eksbuild.3, 1.31: v1.31.2-eksbuild.3; later minors: any",
    ]
