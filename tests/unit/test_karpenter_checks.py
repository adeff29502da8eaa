"""Guardrails of the Karpenter mode: one case per rule, each with its exact message. That the
duration settings and the label rule take exactly what the NodePool CRD takes is judged by the
API server in tests/e2e/test_karpenter_crds.py."""

from datetime import date

import pytest

from gpu_pool.settings import ConfigError, PoolSettings
from tests.support import rules

TODAY = date(2026, 12, 2)


def karpenter(**pool):
    return {"pool": {"provisioner": "karpenter", **pool}}


CASES = {
    # Karpenter launches into a Local Zone's subnet (its own e2e suite, test/suites/localzone):
    # no rule, unlike Auto Mode (GP-AUTO-14; docs/training.md, Local Zones).
    "local-zone": (
        {"region": "us-east-1", **karpenter(zones=["us-east-1-dfw-2a"])},
        [],
    ),
    "not-nvidia": (
        karpenter(instance_types=["g4ad.xlarge"]),
        [
            (
                "E",
                "pool.instance_types[0]: 'g4ad.xlarge' carries AMD Radeon Pro V520, not an NVIDIA GPU; the NVIDIA AMIs, device plugin and GPU Operator do nothing there",
            )
        ],
    ),
    "fractional-g6f": (
        karpenter(instance_types=["g6f.xlarge"]),
        [
            (
                "E",
                "pool.instance_types: 'g6f.xlarge' (fractional L4: one partial GPU per node) reports 0 GPUs in EC2's data, which is all Karpenter counts: it would never launch it for a pod requesting nvidia.com/gpu; use provisioner: cluster-autoscaler for g6f, or a whole-GPU family such as g6",
            )
        ],
    ),
    "fractional-gr6f": (
        karpenter(instance_types=["g6.xlarge", "gr6f.4xlarge"]),
        [
            (
                "E",
                "pool.instance_types: 'gr6f.4xlarge' (fractional L4: one partial GPU per node) reports 0 GPUs in EC2's data, which is all Karpenter counts: it would never launch it for a pod requesting nvidia.com/gpu; use provisioner: cluster-autoscaler for gr6f, or a whole-GPU family such as g6",
            )
        ],
    ),
    # The AMI alias resolves an image per architecture: the NodePool launches either.
    "mixed-arch": (
        karpenter(instance_types=["g5.xlarge", "g5g.xlarge"]),
        [
            (
                "W",
                "pool.instance_types: mixes CPU architectures (amd64: g5.xlarge; arm64: g5g.xlarge): a pending pod may get a node of either, and a container image built for one architecture fails on the other's (exec format error); put each architecture in a pool of its own, or give every pod of this pool a kubernetes.io/arch nodeSelector",
            )
        ],
    ),
    "gpu-limit-below-largest-type": (
        karpenter(instance_types=["g5.xlarge", "g5.12xlarge"], karpenter={"gpu_limit": 2}),
        [
            (
                "E",
                "pool.karpenter.gpu_limit: 2 is below the 4 GPUs of g5.12xlarge: Karpenter could never launch it: raise it to 4 or more, or drop the type",
            )
        ],
    ),
    "no-nodes": (
        karpenter(max_size=0, desired_size=0),
        [
            (
                "E",
                "pool.max_size: 0: the NodePool's node limit; the pool could never run a GPU node: set 1 or more",
            ),
            (
                "E",
                "pool.karpenter.gpu_limit: 0 is below the 1 GPUs of g5.xlarge: Karpenter could never launch it: raise it to 1 or more, or drop the type",
            ),
        ],
    ),
    "karpenter-label": (
        karpenter(labels={"karpenter.sh/team": "ml"}),
        [
            (
                "E",
                "pool.labels: 'karpenter.sh/team' is reserved by Karpenter (kubernetes.io/hostname, and karpenter.sh and karpenter.k8s.aws keys other than their well-known labels): the API server refuses the NodePool; use your own domain, e.g. example.com/team",
            )
        ],
    ),
    "karpenter-aws-label": (
        karpenter(labels={"karpenter.k8s.aws/ec2nodeclass": "x"}),
        [
            (
                "E",
                "pool.labels: 'karpenter.k8s.aws/ec2nodeclass' is reserved by Karpenter (kubernetes.io/hostname, and karpenter.sh and karpenter.k8s.aws keys other than their well-known labels): the API server refuses the NodePool; use your own domain, e.g. example.com/ec2nodeclass",
            )
        ],
    ),
    "hostname-label": (
        karpenter(labels={"kubernetes.io/hostname": "gpu-1"}),
        [
            (
                "E",
                "pool.labels: 'kubernetes.io/hostname' is reserved by Karpenter (kubernetes.io/hostname, and karpenter.sh and karpenter.k8s.aws keys other than their well-known labels): the API server refuses the NodePool; use your own domain, e.g. example.com/hostname",
            )
        ],
    ),
    "kubernetes-io-label-kubelet-refuses": (
        karpenter(labels={"node-role.kubernetes.io/gpu": "", "team.k8s.io/x": "a"}),
        [
            (
                "E",
                "pool.labels: 'node-role.kubernetes.io/gpu' is a kubernetes.io/k8s.io label the kubelet refuses in --node-labels, where Karpenter puts the pool's labels: every node would launch and never join; use node.kubernetes.io/gpu or your own domain, e.g. example.com/gpu",
            ),
            (
                "E",
                "pool.labels: 'team.k8s.io/x' is a kubernetes.io/k8s.io label the kubelet refuses in --node-labels, where Karpenter puts the pool's labels: every node would launch and never join; use node.kubernetes.io/x or your own domain, e.g. example.com/x",
            ),
        ],
    ),
    # Neither the CRD, Karpenter nor the kubelet refuses these.
    "labels-everyone-accepts": (
        karpenter(
            labels={
                "node.kubernetes.io/gpu-tier": "a",
                "team.kubelet.kubernetes.io/x": "a",
                "karpenter.sh/capacity-type": "on-demand",
                "karpenter.k8s.aws/instance-gpu-name": "a10g",
                "karpenter.sh.example.com/x": "a",
                "example.com/team": "ml",
            }
        ),
        [],
    ),
    "no-grace-period-with-expiry": (
        karpenter(karpenter={"termination_grace_period": None}),
        [
            (
                "W",
                "pool.karpenter.termination_grace_period: unset with expire_after 720h: an expired node is drained of all but its karpenter.sh/do-not-disrupt pods and then held, its free GPUs idle and billed, for as long as they run: set a duration such as 24h (the default), or expire_after: Never",
            )
        ],
    ),
    "no-grace-period-without-expiry": (
        karpenter(karpenter={"termination_grace_period": None, "expire_after": "Never"}),
        [],
    ),
    "latest-alias": (
        karpenter(karpenter={"ami_alias": "al2023@latest"}),
        [
            (
                "E",
                "pool.karpenter.ami_alias: 'al2023@latest': every AMI release would replace every node of the pool (drift), running jobs included; pin a release such as al2023@v20260714 and move it on purpose",
            )
        ],
    ),
    "alias-of-another-family": (
        karpenter(ami_family="BOTTLEROCKET", karpenter={"ami_alias": "al2023@v20260714"}),
        [
            (
                "E",
                "pool.karpenter.ami_alias: 'al2023@v20260714' names AMI family al2023 but ami_family is BOTTLEROCKET: use bottlerocket@<version>",
            )
        ],
    ),
    "karpenter-too-old-for-1-36": (
        {**karpenter(), "karpenter": {"chart_version": "1.12.3"}},
        [
            (
                "E",
                "karpenter.chart_version: Karpenter 1.12.3 does not support Kubernetes 1.36 (it needs 1.13.0 or newer): use 1.15.0, or leave it unset",
            )
        ],
    ),
    "karpenter-on-1-29": (
        {
            **karpenter(),
            "cluster": {
                "kubernetes_version": "1.29",
                "existing": {
                    "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:k",
                    "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
                    "node_monitoring_agent": False,
                    "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
                    "cluster_security_group_id": "sg-0aaaaaaaaaaaaaaaa",
                },
            },
        },
        [
            (
                "W",
                "cluster.kubernetes_version: 1.29 left EKS extended support on 2026-03-23, and EKS upgrades such clusters itself at a time of its choosing: upgrade gpu-pool on yours (aws eks update-cluster-version); the stack follows once it reads the new minor, from the cluster's lookup taken again (`cdk context --reset` its entry) or, where nothing is looked up, from cluster.kubernetes_version",
            ),
            (
                "E",
                "cluster.kubernetes_version: Karpenter's compatibility matrix starts at 1.30; 1.29 is not in it: upgrade the cluster, or use provisioner: cluster-autoscaler",
            ),
        ],
    ),
    "karpenter-version-not-exact": (
        {**karpenter(), "karpenter": {"chart_version": "latest"}},
        [
            (
                "E",
                "karpenter.chart_version: 'latest' is not an exact version; pin one such as 1.2.3 (never 'latest' or a range), or leave it unset for the tested pin in gpu_pool/model/versions.py",
            )
        ],
    ),
    "existing-cluster-without-security-group": (
        {
            **karpenter(),
            "cluster": {
                "existing": {
                    "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:k",
                    "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
                    "node_monitoring_agent": False,
                    "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
                }
            },
        },
        [
            (
                "E",
                "cluster.existing.cluster_security_group_id: required with a karpenter pool: Karpenter puts its nodes in the cluster security group; copy it from `aws eks describe-cluster` (resourcesVpcConfig.clusterSecurityGroupId)",
            )
        ],
    ),
    "controller-on-a-gpu-pool": (
        {**karpenter(), "karpenter": {"node_selector": {"gpu-pool.io/pool": "gpu"}}},
        [
            (
                "E",
                "karpenter.node_selector: {'gpu-pool.io/pool': 'gpu'} selects pool 'gpu', whose GPU nodes are tainted: the karpenter pod would stay Pending there (or keep a GPU node from scaling down): select the system nodes",
            )
        ],
    ),
    "min-size-ignored": (
        karpenter(min_size=1, desired_size=1),
        [
            (
                "W",
                "pool.min_size: 1 is ignored with provisioner: karpenter, which launches nodes only for pending pods and keeps no minimum: leave it 0",
            ),
            (
                "W",
                "pool.desired_size: 1 is ignored with provisioner: karpenter, which launches nodes only for pending pods and keeps no minimum: leave it 0",
            ),
        ],
    ),
    "one-entry-may-mix-gpu-counts": (
        karpenter(instance_types=[["g5.xlarge", "g5.12xlarge"], "g6.xlarge"]),
        [],
    ),
    "mixed-app-still-checks-the-autoscaler": (
        {
            "pools": {
                "a": {
                    "provisioner": "karpenter",
                    "taints": [{"key": "nvidia.com/gpu", "value": "karpenter"}],
                },
                "b": {"labels": {"accelerator": "nvidia", "workload": "b"}},
            },
            "autoscaler": {"image_tag": "v1.35.2"},
        },
        [
            (
                "E",
                "autoscaler.image_tag: 'v1.35.2' does not match the cluster's minor 1.36; Cluster Autoscaler supports only its own minor: use a v1.36.x tag",
            )
        ],
    ),
    # Karpenter takes the AMI from the EC2NodeClass alias; a release version is a node group's.
    "ami-release-version-ignored": (
        karpenter(ami_release_version="1.36.1-20261120", ami_type="AL2023_x86_64_NVIDIA"),
        [
            (
                "W",
                "pool.ami_release_version: '1.36.1-20261120' is ignored with provisioner: karpenter, whose nodes take their AMI from karpenter.ami_alias (the family from ami_family, the variant from each instance type): remove it, and pin the AMI with karpenter.ami_alias",
            ),
            (
                "W",
                "pool.ami_type: 'AL2023_x86_64_NVIDIA' is ignored with provisioner: karpenter, whose nodes take their AMI from karpenter.ami_alias (the family from ami_family, the variant from each instance type): remove it, and pin the AMI with karpenter.ami_alias",
            ),
        ],
    ),
    "pod-pending-to-two-provisioners": (
        {
            "pools": {
                "a": {"provisioner": "karpenter"},
                "b": {"labels": {"accelerator": "nvidia", "workload": "b"}},
            }
        },
        [
            (
                "W",
                "pools.b.taints: a GPU pod that tolerates pool 'b' (cluster-autoscaler) and selects no pool also fits pool 'a' (karpenter): both would launch a node for it and one would idle until scaled down; select gpu-pool.io/pool in such pods, or give the pools of each provisioner a taint of their own",
            )
        ],
    ),
    # The node-group pool's extra taint keeps its pods off the Karpenter pool, but a pod that
    # tolerates it still fits the Karpenter pool, whose taints it also tolerates.
    "pod-pending-to-two-provisioners-through-a-superset-of-tolerations": (
        {
            "pools": {
                "a": {"provisioner": "karpenter"},
                "b": {
                    "labels": {"accelerator": "nvidia", "workload": "b"},
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "true"},
                        {"key": "dedicated", "value": "b"},
                    ],
                },
            }
        },
        [
            (
                "W",
                "pools.b.taints: a GPU pod that tolerates pool 'b' (cluster-autoscaler) and selects no pool also fits pool 'a' (karpenter): both would launch a node for it and one would idle until scaled down; select gpu-pool.io/pool in such pods, or give the pools of each provisioner a taint of their own",
            )
        ],
    ),
    "provisioners-with-taints-of-their-own": (
        {
            "pools": {
                "a": {
                    "provisioner": "karpenter",
                    "taints": [{"key": "nvidia.com/gpu", "value": "karpenter"}],
                },
                "b": {"labels": {"accelerator": "nvidia", "workload": "b"}},
            }
        },
        [],
    ),
    # Karpenter's capacity of a type is EC2's figures, no hugepages; only a NodeOverlay adds
    # them, alpha and gated off in v1.14.1 (pkg/providers/instancetype/types.go,
    # reference/settings.md "Feature Gates").
    "efa-pods-requesting-hugepages-never-fit": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            **karpenter(instance_types=["p5.48xlarge"], zones=["us-east-1a"], efa=True),
        },
        [
            (
                "W",
                "pool.efa: true with provisioner: karpenter, which counts only an instance type's own capacity, and hugepages are not part of it (they enter only through a NodeOverlay, alpha and off by default in Karpenter 1.15.0): a pod requesting hugepages-2Mi never gets a node; let EFA pods request none and set FI_EFA_USE_HUGE_PAGE=0 in them, or use provisioner: cluster-autoscaler",
            )
        ],
    ),
    # Reserved capacity only keeps Never; a duration given for it says so instead of vanishing.
    "reserved-only-disruption-settings-unused": (
        karpenter(
            instance_types=["p5.48xlarge"],
            capacity_reservation={"type": "odcr", "id": "cr-0123456789abcdef0"},
            karpenter={"consolidate_after": "10m", "expire_after": "Never"},
        ),
        [
            (
                "W",
                "pool.karpenter.consolidate_after: 10m is not used: a pool of reserved capacity only keeps its nodes (Never: the reservation is paid for whether a node runs or not); remove it, or for an ODCR set capacity_reservation.fallback: on-demand, with which the pool's own disruption settings win",
            )
        ],
    ),
    "fallback-pool-disruption-settings-used": (
        karpenter(
            instance_types=["p5.48xlarge"],
            capacity_reservation={
                "type": "odcr",
                "id": "cr-0123456789abcdef0",
                "fallback": "on-demand",
            },
            karpenter={"consolidate_after": "10m", "expire_after": "336h"},
        ),
        [],
    ),
    "autoscaler-settings-unused-without-node-group-pools": (
        {**karpenter(), "autoscaler": {"image_tag": "v1.35.2"}},
        [],
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


@pytest.mark.parametrize(
    ("karpenter_settings", "message"),
    [
        (
            {"termination_grace_period": "Never"},
            "karpenter.termination_grace_period: 'Never' is not a duration Karpenter takes: "
            "hours, minutes, seconds, e.g. 24h or 1h30m (not Never)",
        ),
        (
            {"expire_after": "30d"},
            "karpenter.expire_after: '30d' is not a duration Karpenter takes: hours, minutes, "
            "seconds, e.g. 720h or 1h30m, or Never",
        ),
    ],
)
def test_duration_settings_name_what_is_valid(karpenter_settings, message):
    with pytest.raises(ConfigError) as raised:
        PoolSettings(provisioner="karpenter", karpenter=karpenter_settings)
    assert str(raised.value) == message


def test_expire_after_and_consolidate_after_take_never():
    settings = PoolSettings(
        provisioner="karpenter", karpenter={"expire_after": "Never", "consolidate_after": "Never"}
    )
    assert (settings.karpenter.expire_after, settings.karpenter.consolidate_after) == (
        "Never",
        "Never",
    )
