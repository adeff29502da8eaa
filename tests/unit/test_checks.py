"""Guardrails: one case per rule, each with the exact message users will read."""

from datetime import date

import pytest

from tests.support import rules
from tests.support.paths import ROOT
from tests.support.rules import documented

TODAY = date(2026, 12, 2)

# (settings, [(E|W, message), ...])
_EXISTING_ONE_ZONE = {
    "cluster": {
        "existing": {
            "kubectl_provider_service_token": "arn:aws:lambda:eu-west-1:123456789012:function:k",
            "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
            "node_monitoring_agent": False,
            "subnets_by_zone": {"eu-west-1a": ["subnet-0123abcd"]},
        }
    },
}

CASES = {
    "mixed-gpu-count": (
        {"pool": {"instance_types": [["g5.xlarge", "g5.12xlarge"]]}},
        [
            (
                "E",
                "pool.instance_types[0]: instance types differ in GPU count (g5.xlarge: 1, g5.12xlarge: 4); the autoscaler's node template has one count per node group: put them in separate entries",
            ),
        ],
    ),
    "mixed-arch": (
        {"pool": {"instance_types": [["g5.xlarge", "g5g.xlarge"]]}},
        [
            (
                "E",
                "pool.instance_types[0]: instance types differ in CPU architecture (g5.xlarge: x86_64, g5g.xlarge: arm64); a node group has one AMI: put them in separate entries",
            ),
        ],
    ),
    # Each architecture its own node group, but a pod without an arch selector may get either.
    "mixed-arch-entries": (
        {"pool": {"instance_types": ["g5.xlarge", "g5g.xlarge"]}},
        [
            (
                "W",
                "pool.instance_types: mixes CPU architectures (amd64: g5.xlarge; arm64: g5g.xlarge): a pending pod may get a node of either, and a container image built for one architecture fails on the other's (exec format error); put each architecture in a pool of its own, or give every pod of this pool a kubernetes.io/arch nodeSelector",
            )
        ],
    ),
    "not-nvidia-amd": (
        {"pool": {"instance_types": ["g4ad.xlarge"]}},
        [
            (
                "E",
                "pool.instance_types[0]: 'g4ad.xlarge' carries AMD Radeon Pro V520, not an NVIDIA GPU; the NVIDIA AMIs, device plugin and GPU Operator do nothing there",
            ),
        ],
    ),
    "not-nvidia-habana": (
        {"pool": {"instance_types": ["dl1.24xlarge"]}},
        [
            (
                "E",
                "pool.instance_types[0]: 'dl1.24xlarge' carries Habana Gaudi, not an NVIDIA GPU; the NVIDIA AMIs, device plugin and GPU Operator do nothing there",
            ),
        ],
    ),
    "not-nvidia-inferentia": (
        {"pool": {"instance_types": ["inf2.xlarge"]}},
        [
            (
                "E",
                "pool.instance_types[0]: 'inf2.xlarge' carries AWS Inferentia2, not an NVIDIA GPU; the NVIDIA AMIs, device plugin and GPU Operator do nothing there",
            ),
        ],
    ),
    "cpu-type": (
        {"pool": {"instance_types": ["c5.xlarge"]}},
        [
            (
                "E",
                "pool.instance_types[0]: 'c5.xlarge' is not an NVIDIA GPU instance type in the catalog (families: g4dn, g5, g5g, g6, g6e, g6f, g7, g7e, gr6, gr6f, p3, p3dn, p4d, p4de, p5, p5e, p5en, p6-b200, p6-b300, p6e-gb200)",
            ),
        ],
    ),
    "unknown-size": (
        {"pool": {"instance_types": ["p5.24xlarge"]}},
        [
            (
                "E",
                "pool.instance_types[0]: 'p5.24xlarge' is not a p5 size in the catalog (sizes: 4xlarge, 48xlarge)",
            ),
        ],
    ),
    "arm-type-x86-ami": (
        {"pool": {"instance_types": ["g5g.xlarge"], "ami_type": "AL2023_x86_64_NVIDIA"}},
        [
            (
                "E",
                "pool.ami_type: AL2023_x86_64_NVIDIA does not run on g5g.xlarge (arm64): use AL2023_ARM_64_NVIDIA, or leave ami_type unset to derive it from the instance type",
            ),
        ],
    ),
    "x86-type-arm-ami": (
        {"pool": {"instance_types": ["p5.48xlarge"], "ami_type": "AL2023_ARM_64_NVIDIA"}},
        [
            (
                "E",
                "pool.ami_type: AL2023_ARM_64_NVIDIA does not run on p5.48xlarge (x86_64): use AL2023_x86_64_NVIDIA, or leave ami_type unset to derive it from the instance type",
            ),
        ],
    ),
    "driver-too-old": (
        {"pool": {"instance_types": ["g7.2xlarge"]}},
        [
            (
                "E",
                "pool.instance_types[0]: 'g7.2xlarge' (nvidia-rtx-pro-4500) needs NVIDIA driver 595 or newer; the EKS NVIDIA AMIs carry 580 (amazon-eks-ami#2768), so its GPU is unusable: choose another family, e.g. g7e",
            ),
        ],
    ),
    "al2023-without-plugin": (
        {"pool": {"gpu_software": "none"}},
        [
            (
                "E",
                "pool.gpu_software: 'none' on AL2023: its NVIDIA AMI carries no device plugin, so nodes would advertise no nvidia.com/gpu and GPU pods stay Pending; use 'device-plugin' or 'gpu-operator'",
            ),
        ],
    ),
    "plugin-on-bottlerocket": (
        {"pool": {"ami_family": "BOTTLEROCKET", "gpu_software": "device-plugin"}},
        [
            (
                "E",
                "pool.gpu_software: 'device-plugin' on Bottlerocket: its NVIDIA AMI ships the device plugin, a second one would fight it; use 'none' (or 'gpu-operator', which then skips its own plugin)",
            ),
        ],
    ),
    "operator-driver": (
        {"pool": {"gpu_software": "gpu-operator", "gpu_operator": {"driver_enabled": True}}},
        [
            (
                "E",
                "pool.gpu_operator.driver_enabled: true, but the EKS NVIDIA AMIs already carry the driver; a second one breaks the node's GPU stack: set it to false",
            ),
        ],
    ),
    "operator-toolkit": (
        {"pool": {"gpu_software": "gpu-operator", "gpu_operator": {"toolkit_enabled": True}}},
        [
            (
                "E",
                "pool.gpu_operator.toolkit_enabled: true, but the EKS NVIDIA AMIs already carry the toolkit; a second one breaks the node's GPU stack: set it to false",
            ),
        ],
    ),
    "chart-latest": (
        {"pool": {"versions": {"device_plugin": "latest"}}},
        [
            (
                "E",
                "pool.versions.device_plugin: 'latest' is not an exact version; pin one such as 1.2.3 (never 'latest' or a range), or leave it unset for the tested pin in gpu_pool/model/versions.py",
            ),
        ],
    ),
    "chart-range": (
        {"pool": {"versions": {"gpu_operator": "^26.3"}}},
        [
            (
                "E",
                "pool.versions.gpu_operator: '^26.3' is not an exact version; pin one such as 1.2.3 (never 'latest' or a range), or leave it unset for the tested pin in gpu_pool/model/versions.py",
            ),
        ],
    ),
    "ca-image-latest": (
        {"autoscaler": {"image_tag": "latest"}},
        [
            (
                "E",
                "autoscaler.image_tag: 'latest' is not an exact version; pin one such as 1.2.3 (never 'latest' or a range), or leave it unset for the tested pin in gpu_pool/model/versions.py",
            ),
        ],
    ),
    "ca-image-minor": (
        {"autoscaler": {"image_tag": "v1.34.5"}},
        [
            (
                "E",
                "autoscaler.image_tag: 'v1.34.5' does not match the cluster's minor 1.36; Cluster Autoscaler supports only its own minor: use a v1.36.x tag",
            ),
        ],
    ),
    "reserved-label": (
        {"pool": {"labels": {"accelerator": "nvidia", "nvidia.com/gpu.present": "false"}}},
        [
            (
                "E",
                "pool.labels: 'nvidia.com/gpu.present' is set by gpu-pool itself (the device plugin's affinity needs it on every GPU node): remove it",
            ),
        ],
    ),
    "bad-label-key": (
        {"pool": {"labels": {"bad key": "x"}}},
        [
            (
                "E",
                "pool.labels: 'bad key' is not a label key: use an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.'",
            ),
        ],
    ),
    "bad-label-value": (
        {"pool": {"labels": {"team": "has space"}}},
        [
            (
                "E",
                "pool.labels.team: 'has space' is not a label value: use up to 63 letters, digits, "
                "'-', '_' or '.', starting and ending alphanumeric",
            ),
        ],
    ),
    "taint-colon": (
        {"pool": {"taints": [{"key": "nvidia.com/gpu", "value": "a:b"}]}},
        [
            (
                "E",
                "pool.taints[0]: value 'a:b' contains ':'; Cluster Autoscaler's taint tag is value:Effect and would misread it: choose a value without ':'",
            ),
        ],
    ),
    "taint-no-value": (
        {"pool": {"taints": [{"key": "nvidia.com/gpu"}]}},
        [
            (
                "W",
                "pool.taints[0]: taint 'nvidia.com/gpu' has no value; pods tolerating it with operator Equal and a value (as most examples do) will not match: give it a value, e.g. 'true'",
            ),
        ],
    ),
    "taint-duplicate": (
        {"pool": {"taints": [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]}},
        [
            ("E", "pool.taints[1]: duplicate taint 'a' with effect NoSchedule"),
        ],
    ),
    "no-taint": (
        {"pool": {"taints": []}},
        [
            (
                "W",
                "pool.taints: no taint: any pod can land on a GPU node and keep it (and its cost) alive; add e.g. nvidia.com/gpu=true:NoSchedule",
            ),
        ],
    ),
    "min-over-max": (
        {"pool": {"min_size": 5, "desired_size": 5, "max_size": 2}},
        [
            ("E", "pool.min_size: 5 is above max_size 2"),
            (
                "W",
                "pool.min_size: 5: that many GPU nodes per node group run (and bill) even when idle; 0 lets the pool scale to zero",
            ),
        ],
    ),
    "desired-outside": (
        {"pool": {"desired_size": 9}},
        [
            ("E", "pool.desired_size: 9 is outside [min_size 0, max_size 8]"),
        ],
    ),
    "negative": (
        {"pool": {"min_size": -1}},
        [
            ("E", "pool.min_size: -1 is negative; sizes are 0 or more"),
        ],
    ),
    # #48 item 5: plan priced max_size 100000000 at $100,600,000 an hour without a word.
    "max-size-above-node-group-quota": (
        {"pool": {"max_size": 100000000}},
        [
            (
                "E",
                "pool.max_size: 100000000 is above the nodes EKS allows a managed node group (its quota 'Nodes per managed node group', L-BD136A63: 450 unless raised): EKS refuses the node group at deploy; set 450 or less, or spread the nodes over more pools",
            ),
        ],
    ),
    "max-size-at-node-group-quota": ({"pool": {"max_size": 450}}, []),
    "node-pool-limit-above-any-cluster": (
        {"pool": {"provisioner": "karpenter", "max_size": 100000000}},
        [
            (
                "W",
                "pool.max_size: 100000000 nodes is above the 5000 Kubernetes supports in one cluster (kubernetes.io, 'Considerations for large clusters'): the NodePool's limit stops nothing, and plan prices the pool at it; set the most nodes the pool may really run",
            ),
        ],
    ),
    "node-pool-limit-at-largest-cluster": (
        {"pool": {"provisioner": "auto-mode", "max_size": 5000}},
        [],
    ),
    "max-zero": (
        {"pool": {"max_size": 0}},
        [
            ("E", "pool.max_size: 0: the pool could never run a GPU node; set 1 or more"),
        ],
    ),
    "min-above-zero": (
        {"pool": {"min_size": 1, "desired_size": 1}},
        [
            (
                "W",
                "pool.min_size: 1: that many GPU nodes per node group run (and bill) even when idle; 0 lets the pool scale to zero",
            ),
        ],
    ),
    "too-many-tags": (
        {
            "pool": {
                "labels": {
                    "l0": "x",
                    "l1": "x",
                    "l2": "x",
                    "l3": "x",
                    "l4": "x",
                    "l5": "x",
                    "l6": "x",
                    "l7": "x",
                    "l8": "x",
                    "l9": "x",
                    "l10": "x",
                    "l11": "x",
                    "l12": "x",
                    "l13": "x",
                    "l14": "x",
                    "l15": "x",
                    "l16": "x",
                    "l17": "x",
                    "l18": "x",
                    "l19": "x",
                    "l20": "x",
                    "l21": "x",
                    "l22": "x",
                    "l23": "x",
                    "l24": "x",
                    "l25": "x",
                    "l26": "x",
                    "l27": "x",
                    "l28": "x",
                    "l29": "x",
                    "l30": "x",
                    "l31": "x",
                    "l32": "x",
                    "l33": "x",
                    "l34": "x",
                    "l35": "x",
                    "l36": "x",
                    "l37": "x",
                    "l38": "x",
                    "l39": "x",
                }
            }
        },
        [
            (
                "E",
                "pool.labels: labels and taints need 49 ASG tags, plus 3 EKS adds: 52, over Auto Scaling's 50 per group; use fewer labels/taints",
            ),
        ],
    ),
    "small-disk": (
        {"pool": {"disk_size_gib": 50}},
        [
            (
                "W",
                "pool.disk_size_gib: 50 GiB: CUDA images are several GiB each and pods get evicted under disk pressure; use 100 or more (default 200)",
            ),
        ],
    ),
    "huge-disk": (
        {"pool": {"disk_size_gib": 20000}},
        [
            ("E", "pool.disk_size_gib: 20000 is outside 1..16384 GiB"),
        ],
    ),
    "same-type-twice": (
        {"pool": {"instance_types": ["g5.xlarge", ["g6.xlarge", "g5.xlarge"]]}},
        [
            (
                "E",
                "pool.instance_types[1]: 'g5.xlarge' is listed again (first in "
                "instance_types[0]); a type belongs to one node group: remove one",
            ),
        ],
    ),
    "ami-type-of-another-family": (
        {"pool": {"ami_family": "AL2023", "ami_type": "BOTTLEROCKET_x86_64_NVIDIA"}},
        [
            (
                "E",
                "pool.ami_type: 'BOTTLEROCKET_x86_64_NVIDIA' is a BOTTLEROCKET AMI but ami_family "
                "is AL2023: drop ami_type (it is derived from ami_family) or set ami_family: "
                "BOTTLEROCKET",
            ),
        ],
    ),
    "existing-subnets-in-another-region": (
        {
            "account": "123456789012",
            "region": "eu-west-1",
            "cluster": {
                "existing": {
                    "kubectl_provider_service_token": "arn:aws:lambda:eu-west-1:1:function:k",
                    "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
                    "node_monitoring_agent": False,
                    "subnets_by_zone": {"us-west-2a": ["subnet-0123abcd"]},
                }
            },
        },
        [
            (
                "E",
                "cluster.existing.subnets_by_zone: 'us-west-2a' is not in region eu-west-1, where "
                "the stack and the cluster are: use that region's subnets",
            ),
        ],
    ),
    "autoscaler-on-the-gpu-pool": (
        {"autoscaler": {"node_selector": {"workload": "inference"}}},
        [
            (
                "E",
                "autoscaler.node_selector: {'workload': 'inference'} selects pool 'gpu', whose GPU "
                "nodes are tainted: the autoscaler pod would stay Pending there (or keep a GPU "
                "node from scaling down): select the system nodes",
            ),
        ],
    ),
    "autoscaler-selector-value": (
        {"autoscaler": {"node_selector": {"role": "system nodes"}}},
        [
            (
                "E",
                "autoscaler.node_selector.role: 'system nodes' is not a label value: use up to 63 "
                "letters, digits, '-', '_' or '.', starting and ending alphanumeric",
            ),
        ],
    ),
    "cidrs-with-a-private-endpoint": (
        {"cluster": {"endpoint_access": "private", "public_access_cidrs": ["203.0.113.0/24"]}},
        [
            (
                "E",
                "cluster.public_access_cidrs: set, but endpoint_access is private (there is no "
                "public endpoint): remove it",
            ),
        ],
    ),
    "narrowed-public-only-endpoint": (
        {"cluster": {"endpoint_access": "public", "public_access_cidrs": ["203.0.113.0/24"]}},
        [
            (
                "E",
                "cluster.public_access_cidrs: with endpoint_access public the nodes reach the API "
                "over the internet, so it cannot be narrowed: use endpoint_access "
                "public_and_private to narrow it",
            ),
        ],
    ),
    "eks-no-longer-creates": (
        {"cluster": {"kubernetes_version": "1.29"}, "autoscaler": {"enabled": False}},
        [
            (
                "E",
                "cluster.kubernetes_version: EKS no longer creates 1.29 clusters (extended support ended 2026-03-23), so the cluster would fail to create: use 1.36",
            ),
        ],
    ),
    "no-ca-image-for-version": (
        {"cluster": {"kubernetes_version": "1.29"}},
        [
            (
                "E",
                "cluster.kubernetes_version: EKS no longer creates 1.29 clusters (extended support ended 2026-03-23), so the cluster would fail to create: use 1.36",
            ),
            (
                "E",
                "cluster.kubernetes_version: no Cluster Autoscaler image is pinned for 1.29 (its minor must equal the cluster's): set autoscaler.image_tag to a v1.29.x release, move the cluster to another minor (an existing cluster's is its control plane's: upgrade it), or set autoscaler.enabled: false",
            ),
        ],
    ),
    "unsupported-version": (
        {"cluster": {"kubernetes_version": "1.28"}},
        [
            (
                "E",
                "cluster.kubernetes_version: '1.28' is not supported; choose one of 1.32, 1.33, 1.34, 1.35, 1.36",
            ),
        ],
    ),
    "layer-mismatch": (
        {"cluster": {"kubectl_layer_version": "1.33"}},
        [
            (
                "E",
                "cluster.kubectl_layer_version: '1.33' does not match the cluster's 1.36; kubectl must match the API server's minor: remove the setting or set '1.36'",
            ),
        ],
    ),
    "empty-instance-types": (
        {"pool": {"instance_types": []}},
        [
            ("E", "pool.instance_types: empty; list at least one, e.g. ['g5.xlarge']"),
        ],
    ),
    "empty-group": (
        {"pool": {"instance_types": [[]]}},
        [
            ("E", "pool.instance_types[0]: empty list; name at least one instance type"),
        ],
    ),
    "bad-zone": (
        {"account": "123456789012", "region": "us-east-1", "pool": {"zones": ["us-east-1"]}},
        [
            (
                "E",
                "pool.zones: 'us-east-1' is not an availability zone name such as us-east-1a "
                "(or a Local Zone's, such as us-east-1-dfw-2a)",
            ),
        ],
    ),
    "zone-other-region": (
        {"account": "123456789012", "region": "us-east-1", "pool": {"zones": ["eu-west-1a"]}},
        [
            ("E", "pool.zones: 'eu-west-1a' is not in region us-east-1"),
        ],
    ),
    "zone-twice": (
        {"account": "123456789012", "region": "us-east-1", "pool": {"zones": ["us-east-1a", "us-east-1a"]}},
        [
            ("E", "pool.zones: lists a zone twice"),
        ],
    ),
    "zones-need-region": (
        {"pool": {"zones": ["us-east-1a"]}},
        [
            ("E", "pool.zones: needs region: zone names only mean something in a known region"),
        ],
    ),
    "zone-without-subnets": (
        {
            "cluster": {
                "existing": {
                    "kubectl_provider_service_token": "arn:aws:lambda:eu-west-1:123456789012:function:k",
                    "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
                    "node_monitoring_agent": False,
                    "subnets_by_zone": {"eu-west-1a": ["subnet-0123abcd"]},
                }
            },
            "pool": {"zones": ["eu-west-1c"]},
        },
        [
            (
                "E",
                "pool.zones: eu-west-1c not in cluster.existing.subnets_by_zone (eu-west-1a): add its subnets or drop the zone",
            ),
        ],
    ),
    # The cluster's own zones: EKS needs its subnets in two zones or more (EKS user guide,
    # "View Amazon EKS networking requirements for VPC and subnets").
    "cluster-one-zone": (
        {"region": "us-east-1", "cluster": {"zones": ["us-east-1a"]}},
        [
            (
                "E",
                "cluster.zones: 1 distinct zone (us-east-1a): EKS needs the cluster's subnets in at least two Availability Zones; list two or more (pools still choose their own zone among them)",
            ),
        ],
    ),
    # Without an account the region's zones are never looked up: the VPC would keep the
    # pools' zones, one for a lone EFA pool.
    "pool-zones-without-account": (
        {"region": "us-east-1", "pool": {"zones": ["us-east-1a"]}},
        [
            (
                "E",
                "cluster.zones: required when pools name zones (us-east-1a) and account is unset: without an account the region's zones cannot be looked up, and the VPC would hold only the pools' zones; list two or more zones of us-east-1 that include them, or set account",
            ),
        ],
    ),
    "cluster-zone-twice": (
        {"region": "us-east-1", "cluster": {"zones": ["us-east-1a", "us-east-1b", "us-east-1a"]}},
        [("E", "cluster.zones: lists a zone twice")],
    ),
    "cluster-zone-other-region": (
        {"region": "us-east-1", "cluster": {"zones": ["us-east-1a", "eu-west-1b"]}},
        [
            (
                "E",
                "cluster.zones: 'eu-west-1b' is not an availability zone of us-east-1, such as us-east-1a",
            ),
        ],
    ),
    "cluster-local-zone": (
        {"region": "us-east-1", "cluster": {"zones": ["us-east-1a", "us-east-1b", "us-east-1-dfw-2a"]}},
        [
            (
                "E",
                "cluster.zones: 'us-east-1-dfw-2a' is a Local Zone: EKS refuses Local Zone subnets "
                'at cluster creation (EKS user guide, "Launch low-latency EKS clusters with AWS '
                'Local Zones"); list only Availability Zones here and name the Local Zone in the '
                "pool's zones, which get node-only subnets there",
            ),
        ],
    ),
    "cluster-zones-need-region": (
        {"cluster": {"zones": ["us-east-1a", "us-east-1b"]}},
        [
            (
                "E",
                "cluster.zones: needs region: zone names only mean something in a known region",
            ),
        ],
    ),
    "pool-zone-outside-cluster-zones": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "cluster": {"zones": ["us-east-1a", "us-east-1b"]},
            "pools": {"train": {"zones": ["us-east-1c"]}},
        },
        [
            (
                "E",
                "pools.train.zones: us-east-1c not among the cluster's zones (us-east-1a, us-east-1b: cluster.zones): choose among them, or list every zone the cluster needs in cluster.zones before the first deploy (a deployed cluster keeps the zones it was created in: EKS takes no subnet of another zone)",
            ),
        ],
    ),
    "cluster-zones-on-existing": (
        {
            **_EXISTING_ONE_ZONE,
            "cluster": {**_EXISTING_ONE_ZONE["cluster"], "zones": ["eu-west-1a", "eu-west-1b"]},
        },
        [
            (
                "E",
                "cluster.zones: set, but the app does not create this cluster (cluster.existing), and its pools use the zones of cluster.existing.subnets_by_zone: remove it",
            ),
        ],
    ),
    "existing-cluster-without-account": (
        {"cluster": {"name": "inference", "existing": {"node_monitoring_agent": False}}},
        [
            (
                "E",
                "cluster.existing: inference is looked up in the stack's account and Region, and this stack has none: set account and region, or set subnets_by_zone and a kubectl provider of your own (kubectl_provider_service_token, kubectl_provider_role_arn)",
            ),
        ],
    ),
    "auto-mode-on-existing": (
        {**_EXISTING_ONE_ZONE, "cluster": {**_EXISTING_ONE_ZONE["cluster"], "auto_mode": True}},
        [
            (
                "E",
                "cluster.auto_mode: set, but the app does not change a cluster it does not own (cluster.existing): remove it",
            ),
        ],
    ),
    "auto-mode-off-with-an-auto-mode-pool": (
        {"cluster": {"auto_mode": False}, "pools": {"auto": {"provisioner": "auto-mode"}}},
        [
            (
                "E",
                "cluster.auto_mode: false, but provisioner auto-mode is used by pools.auto: remove it (or set true), or move those pools to another provisioner",
            ),
        ],
    ),
    # EKS takes a release of the node group's own Kubernetes minor only (EKS API reference,
    # CreateNodegroup releaseVersion); the default cluster runs 1.36.
    "release-of-another-minor": (
        {"pool": {"ami_release_version": "1.35.2-20261120"}},
        [
            (
                "E",
                "pool.ami_release_version: '1.35.2-20261120' is a Kubernetes 1.35 AMI, but the node groups run 1.36; EKS refuses a release of another minor: use a 1.36.x release, or none for the newest",
            ),
        ],
    ),
    "release-of-the-cluster-minor": (
        {"pool": {"ami_release_version": "1.36.1-20261120"}},
        [],
    ),
    # Bottlerocket releases are the OS's version and commit (1.47.0-6154605b).
    "amazon-linux-release-on-bottlerocket": (
        {
            "pool": {
                "ami_family": "BOTTLEROCKET",
                "ami_release_version": "1.36.1-20261120",
            },
            "autoscaler": {"enabled": False},
        },
        [
            (
                "E",
                "pool.ami_release_version: '1.36.1-20261120' is an Amazon Linux release (Kubernetes version-date); a Bottlerocket node group takes a Bottlerocket release such as 1.47.0-6154605b, or none for the newest",
            ),
        ],
    ),
    "bottlerocket-release-on-bottlerocket": (
        {
            "pool": {"ami_family": "BOTTLEROCKET", "ami_release_version": "1.47.0-6154605b"},
            "autoscaler": {"enabled": False},
        },
        [],
    ),
    "bottlerocket-release-on-al2023": (
        {"pool": {"ami_release_version": "1.47.0-6154605b"}},
        [
            (
                "E",
                "pool.ami_release_version: '1.47.0-6154605b' is not an AL2023 release (Kubernetes version-date, e.g. 1.35.2-20261120); EKS refuses it for an AL2023 node group",
            ),
        ],
    ),
    # EBS encrypts a volume only with a KMS key of its own Region (EBS user guide).
    "kms-key-in-another-region": (
        {
            "region": "us-east-1",
            "account": "123456789012",
            "pool": {
                "volume_kms_key_arn": "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
            },
        },
        [
            (
                "E",
                "pool.volume_kms_key_arn: the key is in eu-west-1, the pool's volumes in us-east-1; EBS encrypts a volume only with a key of its own Region, so every node launch would fail: use a key (or a multi-Region replica) in us-east-1",
            ),
        ],
    ),
    # The app grants a key to whoever launches the nodes by its ARN (checks/volume_key.py).
    "kms-key-alias": (
        {"pool": {"volume_kms_key_arn": "arn:aws:kms:us-east-1:123456789012:alias/gpu-volumes"}},
        [
            (
                "E",
                "pool.volume_kms_key_arn: 'arn:aws:kms:us-east-1:123456789012:alias/gpu-volumes' is an alias; EC2 Auto Scaling launches the node groups' nodes with the key only once allowed to use it, and the app allows that by the key's ARN (a grant and an IAM policy name a key, not an alias): give the key's ARN (aws kms describe-key --key-id <the alias ARN> --query KeyMetadata.Arn)",
            ),
        ],
    ),
    "kms-key-region-unknown-without-a-stack-region": (
        {
            "pool": {
                "volume_kms_key_arn": "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
            }
        },
        [],
    ),
    "karpenter-settings-on-a-node-group-pool": (
        {"pool": {"karpenter": {"expire_after": "Never"}}},
        [
            (
                "W",
                "pool.karpenter: is used with provisioner: karpenter or auto-mode only; this pool's node groups ignore it: remove it, or set one of those provisioners",
            ),
        ],
    ),
    "taint-key": (
        {"pool": {"taints": [{"key": "bad key!", "value": "x"}]}},
        [
            (
                "E",
                "pool.taints[0]: key 'bad key!' is not a taint key: use an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.'",
            ),
        ],
    ),
    "taint-value": (
        {"pool": {"taints": [{"key": "dedicated", "value": "a b"}]}},
        [
            (
                "E",
                "pool.taints[0]: value 'a b' is not a taint value: use up to 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric",
            ),
        ],
    ),
    # Auto Scaling tag keys are at most 128 characters (EC2 Auto Scaling API, Tag.Key); CA's
    # label tag adds 46 to the label key.
    "label-tag-too-long": (
        {"pool": {"labels": {"team." + "a" * 40 + ".example.com/" + "n" * 40: "v"}}},
        [
            (
                "E",
                "pool.labels: ASG tag 'k8s.io/cluster-autoscaler/node-template/label/team."
                + "a" * 40
                + ".example.com/"
                + "n" * 40
                + "' is longer than Auto Scaling allows (key 128, value 256)",
            ),
        ],
    ),
    "efa-on-an-existing-cluster": (
        {
            "region": "us-east-1",
            "account": "123456789012",
            "cluster": {
                "name": "prod",
                "existing": {
                    "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:123456789012:function:k",
                    "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
                    "node_monitoring_agent": False,
                    "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
                },
            },
            "pool": {"instance_types": ["p5.48xlarge"], "zones": ["us-east-1a"], "efa": True},
        },
        [
            (
                "E",
                "pool.efa: true on cluster.existing: the app knows no VPC there for the EFA security group; use the GpuNodePool or KarpenterNodePool construct with `vpc` and `cluster_security_group_id`, or a cluster the app creates",
            ),
        ],
    ),
    "system-nodes": (
        {"cluster": {"system_nodes": {"min_size": 3, "desired_size": 1}}},
        [
            (
                "E",
                "cluster.system_nodes: sizes min 3, desired 1, max 3 must satisfy 0 <= min <= desired <= max, max >= 1",
            ),
        ],
    ),
    # Training pools (reserved capacity, EFA): #22 item 4.
    "efa-type-without-efa": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {"instance_types": ["g5.xlarge"], "zones": ["us-east-1a"], "efa": True},
        },
        [
            (
                "E",
                "pool.efa: true, but g5.xlarge has no EFA (EC2 MaximumEfaInterfaces 0): choose an EFA type such as p5.48xlarge, p4d.24xlarge or g6e.48xlarge, or set efa: false",
            ),
        ],
    ),
    "efa-several-zones": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": ["p5.48xlarge"],
                "zones": ["us-east-1a", "us-east-1b"],
                "efa": True,
            },
        },
        [
            (
                "E",
                "pool.zones: 2 zones (us-east-1a, us-east-1b) with efa: EFA nodes talk over one cluster placement group, which lives in one zone: list exactly one zone",
            ),
        ],
    ),
    "efa-every-zone": (
        {"pool": {"instance_types": ["p5.48xlarge"], "efa": True}},
        [
            (
                "E",
                "pool.zones: no zone (every subnet's) with efa: EFA nodes talk over one cluster placement group, which lives in one zone: list exactly one zone",
            ),
        ],
    ),
    "efa-types-differ-in-cards": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": [["p5.48xlarge", "p5en.48xlarge"]],
                "zones": ["us-east-1a"],
                "efa": True,
            },
        },
        [
            (
                "E",
                "pool.instance_types: EFA interface counts differ (p5.48xlarge: 32, p5en.48xlarge: 16); the pool's launch template has one interface per network card of one type: list types with the same count",
            ),
        ],
    ),
    "capacity-block-several-types": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": ["p5.48xlarge", "p5en.48xlarge"],
                "zones": ["us-east-1a"],
                "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
            },
        },
        [
            (
                "E",
                "pool.instance_types: 2 types (p5.48xlarge, p5en.48xlarge) with a capacity-block: a block is one instance type, and its launch template names exactly that one: list only it",
            ),
        ],
    ),
    "capacity-block-several-zones": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": ["p5.48xlarge"],
                "zones": ["us-east-1a", "us-east-1b"],
                "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
            },
        },
        [
            (
                "E",
                "pool.zones: 2 zones (us-east-1a, us-east-1b) with a capacity-block: a block lives in one zone and its node groups may only use that zone's subnets: list exactly the block's zone",
            ),
        ],
    ),
    "capacity-block-min-size": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": ["p5.48xlarge"],
                "zones": ["us-east-1a"],
                "min_size": 1,
                "desired_size": 1,
                "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
            },
        },
        [
            (
                "W",
                "pool.min_size: 1: that many GPU nodes per node group run (and bill) even when idle; 0 lets the pool scale to zero",
            ),
            (
                "E",
                "pool.min_size: 1 with a capacity-block: before the block starts every launch fails, and EKS scales the group to 0 before it ends: set 0 and let the autoscaler scale up",
            ),
            (
                "E",
                "pool.desired_size: 1 with a capacity-block: a desired size before the block starts gives launch errors until it does: set 0",
            ),
        ],
    ),
    "capacity-block-fractional-gpu": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": ["g6f.xlarge"],
                "zones": ["us-east-1a"],
                "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
            },
        },
        [
            (
                "E",
                "pool.instance_types: 'g6f.xlarge' (fractional L4: one partial GPU per node) is not sold as Capacity Blocks for ML: blocks are whole-GPU types such as p5.48xlarge",
            ),
        ],
    ),
    "capacity-block-spot": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "pool": {
                "instance_types": ["p5.48xlarge"],
                "zones": ["us-east-1a"],
                "capacity_type": "SPOT",
                "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
            },
        },
        [
            (
                "E",
                "pool.capacity_type: SPOT with pool.capacity_reservation.type capacity-block: a block's instances are reserved, never Spot: set ON_DEMAND (the node group's capacity type becomes CAPACITY_BLOCK)",
            ),
        ],
    ),
    "odcr-with-spot": (
        {
            "pool": {
                "capacity_type": "SPOT",
                "capacity_reservation": {
                    "type": "odcr",
                    "preference": "capacity-reservations-only",
                },
            }
        },
        [
            (
                "E",
                "pool.capacity_type: SPOT with pool.capacity_reservation.type odcr: reservations hold on-demand capacity and a Spot launch never uses them: set ON_DEMAND, or drop capacity_reservation",
            ),
        ],
    ),
    "odcr-only-with-fallback": (
        {
            "pool": {
                "capacity_reservation": {
                    "type": "odcr",
                    "preference": "capacity-reservations-only",
                    "fallback": "on-demand",
                }
            }
        },
        [
            (
                "E",
                "pool.capacity_reservation.fallback: on-demand with preference capacity-reservations-only, which never launches outside a reservation: set fallback: none, or preference: open",
            ),
        ],
    ),
    "odcr-target-fallback-on-node-groups": (
        {
            "pool": {
                "capacity_reservation": {
                    "type": "odcr",
                    "id": "cr-0123456789abcdef0",
                    "fallback": "on-demand",
                }
            }
        },
        [
            (
                "E",
                "pool.capacity_reservation.fallback: on-demand on node groups that target reservation cr-0123456789abcdef0: EC2 fails a launch into a full reservation and never runs it On-Demand; add a second, on-demand pool for the workload (the priority expander ranks the reserved groups first), or name the reservation's resource group (resource_group_arn), or use preference: open",
            ),
        ],
    ),
    "karpenter-odcr-open-matching": (
        {
            "pool": {
                "provisioner": "karpenter",
                "capacity_reservation": {"type": "odcr", "preference": "open"},
            }
        },
        [
            (
                "E",
                "pool.capacity_reservation.preference: Karpenter has no open matching and no resource groups (it selects reservations by id): name the reservation's id, or use provisioner: cluster-autoscaler",
            ),
        ],
    ),
    "karpenter-reserved-too-old": (
        {
            "karpenter": {"chart_version": "1.5.0"},
            "cluster": {"kubernetes_version": "1.33"},
            "pool": {
                "provisioner": "karpenter",
                "capacity_reservation": {"type": "odcr", "id": "cr-0123456789abcdef0"},
            },
        },
        [
            (
                "E",
                "pool.capacity_reservation: Karpenter 1.5.0 has no reserved capacity (it came in 1.6.0): set karpenter.chart_version to 1.6.0 or newer (the pin is 1.15.0), or use provisioner: cluster-autoscaler",
            ),
        ],
    ),
    "karpenter-efa-too-old": (
        {
            "account": "123456789012",
            "region": "us-east-1",
            "karpenter": {"chart_version": "1.10.0"},
            "cluster": {"kubernetes_version": "1.34"},
            "pool": {
                "provisioner": "karpenter",
                "instance_types": ["p5.48xlarge"],
                "zones": ["us-east-1a"],
                "efa": True,
            },
        },
        [
            (
                "W",
                "pool.efa: true with provisioner: karpenter, which counts only an instance type's own capacity, and hugepages are not part of it (they enter only through a NodeOverlay, alpha and off by default in Karpenter 1.15.0): a pod requesting hugepages-2Mi never gets a node; let EFA pods request none and set FI_EFA_USE_HUGE_PAGE=0 in them, or use provisioner: cluster-autoscaler",
            ),
            (
                "E",
                "pool.efa: Karpenter 1.10.0 has no EC2NodeClass placementGroupSelector (it came in 1.11.0): set karpenter.chart_version to 1.11.0 or newer (the pin is 1.15.0), or use provisioner: cluster-autoscaler",
            ),
        ],
    ),
}


def findings(settings):
    return rules.findings(settings, today=TODAY)


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert findings(settings) == expected


ERROR_CASES = {k: v for k, v in CASES.items() if any(level == "E" for level, _ in v[1])}


@pytest.mark.synth
@pytest.mark.parametrize(("settings", "expected"), ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_errors_stop_before_anything_is_synthesized(settings, expected):
    rules.assert_nothing_built(settings, expected)


def test_valid_defaults_have_no_findings():
    assert findings({}) == []


@pytest.mark.synth
def test_warnings_reach_the_synth_output_once_each():
    from aws_cdk.assertions import Annotations, Match

    from tests.support.cfn import synth_stack

    stack = synth_stack({"pool": {"min_size": 1, "desired_size": 1, "disk_size_gib": 50}})
    warnings = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    assert sorted((w.id, str(w.entry.data).split(":")[0]) for w in warnings) == [
        ("/Test/GpuPool", "pool.disk_size_gib"),
        ("/Test/GpuPool", "pool.min_size"),
    ]


@pytest.mark.parametrize(
    ("pin", "expected"),
    [
        ("2.1148.1", []),
        (
            "^2.1148.1",
            [
                "package.json devDependencies.aws-cdk: '^2.1148.1' is not an exact version; "
                'pin the CDK CLI, e.g. "2.1148.1"'
            ],
        ),
        (
            "latest",
            [
                "package.json devDependencies.aws-cdk: 'latest' is not an exact version; "
                'pin the CDK CLI, e.g. "2.1148.1"'
            ],
        ),
    ],
)
def test_cdk_cli_must_be_pinned_exactly(tmp_path, pin, expected):
    import json

    from gpu_pool.checks.app import check_cli_pin

    package_json = tmp_path / "package.json"
    package_json.write_text(json.dumps({"devDependencies": {"aws-cdk": pin}}))
    assert [str(f) for f in documented(check_cli_pin(package_json))] == expected


def test_the_projects_own_cli_pin_passes():

    from gpu_pool.checks.app import check_cli_pin

    assert check_cli_pin(ROOT / "package.json") == []
