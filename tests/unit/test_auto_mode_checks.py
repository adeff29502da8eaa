"""Guardrails for Auto Mode pools: one case per rule, each with the exact message users read
(sources: the EKS user guide pages checks/auto_mode.py names)."""

from datetime import date

import pytest

from tests.support import rules

TODAY = date(2026, 12, 2)


def auto(**pool):
    return {"pool": {"provisioner": "auto-mode", **pool}}


EXISTING = {
    "name": "prod",
    "existing": {
        "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:k",
        "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
        "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
    },
}


CASES = {
    "defaults-are-valid": (
        auto(),
        [],
    ),
    "fractional-gpu-type": (
        auto(instance_types=["g6f.xlarge"]),
        [
            (
                "E",
                "pool.instance_types: 'g6f.xlarge' (fractional L4: one partial GPU per node) reports 0 GPUs in EC2's data and Auto Mode does not offer g6f: use provisioner: cluster-autoscaler for it",
            )
        ],
    ),
    "type-auto-mode-does-not-offer": (
        auto(instance_types=["p3.2xlarge"]),
        [
            (
                "E",
                "pool.instance_types: Auto Mode does not launch p3 (p3.2xlarge); its NVIDIA families are g4dn, g5, g5g, g6, g6e, g7e, gr6, p3dn, p4d, p4de, p5, p5e, p5en, p6-b200, p6-b300: use one of them, or another provisioner",
            )
        ],
    ),
    "al2023-family": (
        auto(ami_family="AL2023"),
        [
            (
                "E",
                "pool.ami_family: AL2023, but Auto Mode nodes run Bottlerocket, chosen and patched by EKS: remove ami_family",
            )
        ],
    ),
    "bottlerocket-family-is-what-it-runs": (
        auto(ami_family="BOTTLEROCKET"),
        [],
    ),
    "ami-settings-ignored": (
        auto(
            ami_type="BOTTLEROCKET_x86_64_NVIDIA",
            ami_release_version="1.47.0-6154605b",
            karpenter={"ami_alias": "bottlerocket@v1.66.0"},
        ),
        [
            (
                "W",
                "pool.ami_type: 'BOTTLEROCKET_x86_64_NVIDIA' is ignored with provisioner: auto-mode, whose AMIs EKS chooses and patches itself: remove it",
            ),
            (
                "W",
                "pool.ami_release_version: '1.47.0-6154605b' is ignored with provisioner: auto-mode, whose AMIs EKS chooses and patches itself: remove it",
            ),
            (
                "W",
                "pool.karpenter.ami_alias: 'bottlerocket@v1.66.0' is ignored with provisioner: auto-mode, whose AMIs EKS chooses and patches itself: remove it",
            ),
        ],
    ),
    "min-size-without-static-capacity": (
        auto(min_size=1, desired_size=1),
        [
            (
                "E",
                "pool.min_size: 1: an Auto Mode NodePool launches nodes only for pending pods and keeps no minimum (static capacity is not built by gpu-pool): set 0, or use provisioner: cluster-autoscaler for nodes that stay up",
            ),
            (
                "W",
                "pool.desired_size: 1 is ignored with provisioner: auto-mode, which launches nodes only for pending pods: leave it 0",
            ),
        ],
    ),
    "gpu-operator": (
        auto(gpu_software="gpu-operator"),
        [
            (
                "E",
                "pool.gpu_software: 'gpu-operator', but Auto Mode runs the NVIDIA driver and device plugin itself (not as a visible DaemonSet); a second plugin would fight it: remove gpu_software",
            )
        ],
    ),
    "device-plugin": (
        auto(gpu_software="device-plugin"),
        [
            (
                "E",
                "pool.gpu_software: 'device-plugin', but Auto Mode runs the NVIDIA driver and device plugin itself (not as a visible DaemonSet); a second plugin would fight it: remove gpu_software",
            )
        ],
    ),
    "imds-hop-limit": (
        auto(imds_hop_limit=2),
        [
            (
                "E",
                "pool.imds_hop_limit: 2, but Auto Mode enforces a hop limit of 1 and it cannot be changed: remove imds_hop_limit, or use another provisioner for a workload that reads instance metadata",
            )
        ],
    ),
    "expire-never": (
        auto(karpenter={"expire_after": "Never"}),
        [
            (
                "E",
                "pool.karpenter.expire_after: Never, but Auto Mode replaces every node after at most 21 days (504h): set 504h or less, or leave it unset for Auto Mode's 336h",
            )
        ],
    ),
    "expire-beyond-21-days": (
        auto(karpenter={"expire_after": "720h"}),
        [
            (
                "E",
                "pool.karpenter.expire_after: 720h, but Auto Mode replaces every node after at most 21 days (504h): set 504h or less, or leave it unset for Auto Mode's 336h",
            )
        ],
    ),
    "expire-at-21-days": (
        auto(karpenter={"expire_after": "504h"}),
        [],
    ),
    "sharing": (
        auto(sharing={"mode": "time-slicing", "replicas": 4}),
        [
            (
                "E",
                "pool.sharing.mode: 'time-slicing' with provisioner: auto-mode: Auto Mode runs its own device plugin and its NodeClass has no setting to share GPUs with (EKS user guide, automode/auto-accelerated.adoc, create-node-class.adoc), and its Karpenter counts physical GPUs: use provisioner: cluster-autoscaler",
            )
        ],
    ),
    "training-settings-not-built": (
        auto(
            instance_types=["p5.48xlarge"],
            efa=True,
            capacity_reservation={"type": "capacity-block", "id": "cr-0123456789abcdef0"},
        ),
        [
            (
                "E",
                "pool.capacity_reservation: is not built for provisioner: auto-mode (its NodeClass takes reservations and placement groups, but gpu-pool renders neither there yet): use provisioner: karpenter or cluster-autoscaler for a training pool (docs/training.md)",
            ),
            (
                "E",
                "pool.efa: is not built for provisioner: auto-mode (its NodeClass takes reservations and placement groups, but gpu-pool renders neither there yet): use provisioner: karpenter or cluster-autoscaler for a training pool (docs/training.md)",
            ),
        ],
    ),
    "existing-cluster": (
        {"cluster": EXISTING, "pool": {"provisioner": "auto-mode"}},
        [
            (
                "E",
                "cluster.existing.cluster_security_group_id: required with an auto-mode pool: its NodeClass puts the nodes in the cluster security group; copy it from `aws eks describe-cluster` (resourcesVpcConfig.clusterSecurityGroupId)",
            ),
            (
                "W",
                "cluster.existing: auto-mode pools need EKS Auto Mode compute enabled on prod (aws eks describe-cluster: computeConfig.enabled true); without it the NodePool is never served and its pods stay Pending",
            ),
        ],
    ),
    "pending-to-auto-mode-and-the-autoscaler": (
        {
            "pools": {
                "a": {"provisioner": "auto-mode"},
                "b": {"labels": {"accelerator": "nvidia", "workload": "b"}},
            }
        },
        [
            (
                "W",
                "pools.b.taints: a GPU pod that tolerates pool 'b' (cluster-autoscaler) and selects no pool also fits pool 'a' (auto-mode): both would launch a node for it and one would idle until scaled down; select gpu-pool.io/pool in such pods, or give the pools of each provisioner a taint of their own",
            )
        ],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings, today=TODAY) == expected


ERROR_CASES = {k: v for k, v in CASES.items() if any(level == "E" for level, _ in v[1])}


@pytest.mark.synth
@pytest.mark.parametrize(("settings", "expected"), ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_errors_stop_before_anything_is_synthesized(settings, expected):
    rules.assert_nothing_built(settings, expected)
