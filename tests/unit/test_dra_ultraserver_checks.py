"""Guardrails of DRA pools' scaling (GP-DRA-10, -11) and of UltraServer pools (GP-ULTRA-*):
one case per rule, each with the exact message users read."""

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import load_settings
from tests.support import rules
from tests.support.rules import documented

BLOCK = "cr-0123456789abcdef0"
SOURCE = "kubernetes/autoscaler cluster-autoscaler-1.36.1 cloudprovider/aws/aws_cloud_provider.go:423"
GUIDE = 'EKS UG "Use P6e-GB200 UltraServers with Amazon EKS"'
STATIC_CAPACITY = (
    "W",
    "pool.capacity_reservation: a capacity-block with gpu_software dra-driver: Cluster "
    "Autoscaler cannot start a DRA node group's first node (its AWS template node has no "
    f"ResourceSlices, {SOURCE}), and a block's groups stay at 0 until the block starts; when it "
    "starts, run the group as static capacity: aws eks update-nodegroup-config "
    "--scaling-config minSize=N,desiredSize=N with N the block's instances, and minSize=0 "
    "again before it ends",
)


def dra_pool(**settings):
    return {"pool": {"instance_types": ["g6e.xlarge"], "gpu_software": "dra-driver", **settings}}


def ultraserver(cluster=None, **settings):
    """A p6e-gb200 training pool as EKS documents it, with `settings` over it."""
    pool = {
        "instance_types": ["p6e-gb200.36xlarge"],
        "zones": ["us-east-1a"],
        "gpu_software": "dra-driver",
        "capacity_reservation": {"type": "capacity-block", "id": BLOCK},
        "labels": {"workload": "training"},
        **settings,
    }
    return {
        "account": "123456789012",
        "region": "us-east-1",
        "cluster": cluster or {"kubernetes_version": "1.35"},
        "pool": {k: v for k, v in pool.items() if v is not None},
    }


CASES = {
    "dra-pool-from-zero": (
        dra_pool(),
        [
            (
                "E",
                "pool.min_size: 0 with gpu_software dra-driver: Cluster Autoscaler builds an "
                f"empty node group's template node without ResourceSlices ({SOURCE}), so a pod's "
                "ResourceClaim fits no empty group and the group never gets its first node: set "
                "min_size (and desired_size) 1 or more; CA copies a running node's ResourceSlices "
                "for the next ones",
            )
        ],
    ),
    # One node kept per group: no GP-POOL-26 (its "0 lets the pool scale to zero" is untrue here).
    "dra-pool-keeps-a-node": (dra_pool(min_size=1, desired_size=1), []),
    "device-plugin-pool-keeps-a-node-warns": (
        {"pool": {"instance_types": ["g6e.xlarge"], "min_size": 1, "desired_size": 1}},
        [
            (
                "W",
                "pool.min_size: 1: that many GPU nodes per node group run (and bill) even when "
                "idle; 0 lets the pool scale to zero",
            )
        ],
    ),
    "ultraserver-as-documented": (ultraserver(), [STATIC_CAPACITY]),
    # A block pool's desired size stays 0 until the block starts, and before an upgrade (EKS UG).
    "ultraserver-desired-before-the-block": (
        ultraserver(desired_size=1),
        [
            (
                "E",
                "pool.desired_size: 1 with a capacity-block: a desired size before the block "
                "starts gives launch errors until it does: set 0",
            ),
            STATIC_CAPACITY,
        ],
    ),
    # EKS's shape, the default: the GPU Operator's device plugin for the GPUs, the DRA driver
    # for ComputeDomains only. Its GPUs are nvidia.com/gpu: Cluster Autoscaler starts its nodes
    # like any node group's, so neither GP-DRA-10 nor -11.
    "ultraserver-as-eks-shows-it": (ultraserver(gpu_software=None), []),
    "ultraserver-without-compute-domains": (
        ultraserver(gpu_software=None, compute_domains="none"),
        [(
                "E",
                "pool.compute_domains: 'none' with p6e-gb200.36xlarge: the GPUs of an "
                "UltraServer's instances share one NVLink domain only through IMEX, which the "
                f"NVIDIA DRA driver's ComputeDomains run ({GUIDE}): remove compute_domains (the "
                "default is dra-driver here)",
            )],
    ),
    "ultraserver-with-the-device-plugin": (
        ultraserver(gpu_software="device-plugin"),
        [
            (
                "W",
                "pool.gpu_software: 'device-plugin' with p6e-gb200.36xlarge: no GPU Feature "
                "Discovery runs on the pool (the device plugin chart brings one only with a Node "
                "Feature Discovery release of its own), so its nodes get no "
                "nvidia.com/gpu.clique label, which the EKS guide's jobs select their NVLink "
                "domain by; the GPU Operator runs both: remove gpu_software (the default is "
                "gpu-operator here)",
            )
        ],
    ),
    "compute-domains-without-an-ultraserver": (
        {"pool": {"instance_types": ["g6e.xlarge"], "compute_domains": "dra-driver"}},
        [
            (
                "E",
                "pool.compute_domains: 'dra-driver' without an UltraServer type: ComputeDomains "
                "run IMEX for GPUs that share an NVLink domain across instances (catalog: "
                "p6e-gb200.36xlarge), which these instances do not: remove compute_domains",
            )
        ],
    ),
    "ultraserver-on-an-ami-before-driver-580": (
        ultraserver(gpu_software=None, ami_release_version="1.35.2-20251029"),
        [
            (
                "E",
                "pool.ami_release_version: '1.35.2-20251029' with p6e-gb200.36xlarge: EKS asks "
                f"for AMI release v20251103 or later, with NVIDIA driver 580 ({GUIDE}): pin a "
                "release dated 20251103 or later, or remove ami_release_version (the newest)",
            )
        ],
    ),
    # One driver release per cluster: with a pool whose GPUs it allocates, its kubelet plugin
    # publishes GPUs on every node it runs on, the UltraServer's too, beside the operator's
    # device plugin (GP-PAIR-04).
    "eks-shape-beside-a-dra-gpu-pool": (
        {
            **{k: v for k, v in ultraserver().items() if k != "pool"},
            "pools": {
                "dra": {
                    "instance_types": ["g6e.xlarge"],
                    "gpu_software": "dra-driver",
                    "min_size": 1,
                    "desired_size": 1,
                },
                "gb200": ultraserver(gpu_software=None)["pool"],
            },
        },
        [
            (
                "E",
                "pools.gb200: p6e-gb200.36xlarge nodes of pool 'gb200' would also run the "
                "NVIDIA DRA driver's kubelet plugin of pool 'dra'; a device plugin beside the "
                "DRA driver hands the node's GPUs out twice: a node must run exactly one of them",
            )
        ],
    ),
    "ultraserver-on-the-floor-ami": (
        ultraserver(gpu_software=None, ami_release_version="1.35.2-20251103"),
        [],
    ),
    # The DRA driver runs for the ComputeDomains, so its 1.34 rule speaks, naming that setting.
    "ultraserver-on-1.33-as-eks-shows-it": (
        ultraserver(cluster={"kubernetes_version": "1.33"}, gpu_software=None),
        [
            (
                "E",
                "pool.compute_domains: 'dra-driver' on Kubernetes 1.33: the NVIDIA DRA driver "
                "needs resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the "
                "driver on 1.34 or later): set cluster.kubernetes_version to 1.34 or later",
            )
        ],
    ),
    "ultraserver-on-demand": (
        ultraserver(capacity_reservation=None, min_size=1, desired_size=1),
        [
            (
                "E",
                "pool.capacity_reservation: unset with p6e-gb200.36xlarge: UltraServers are sold "
                'only as Capacity Blocks for ML (EC2 UG "Capacity Blocks for ML"): set type: '
                "capacity-block and the block's id",
            )
        ],
    ),
    "ultraserver-odcr": (
        ultraserver(
            capacity_reservation={"type": "odcr", "id": BLOCK}, min_size=1, desired_size=1
        ),
        [
            (
                "E",
                "pool.capacity_reservation: type odcr with p6e-gb200.36xlarge: UltraServers are "
                'sold only as Capacity Blocks for ML (EC2 UG "Capacity Blocks for ML"): set '
                "type: capacity-block and the block's id",
            )
        ],
    ),
    # The device plugin, so the case shows this rule alone (with the DRA driver, GP-DRA-06 also
    # refuses it: Karpenter has no DRA metadata for p6e-gb200).
    "ultraserver-on-karpenter": (
        ultraserver(provisioner="karpenter", gpu_software=None),
        [
            (
                "E",
                "pool.provisioner: karpenter with p6e-gb200.36xlarge: EKS runs UltraServers on "
                "managed or self-managed node groups only, not on Karpenter or EKS Auto Mode "
                f"({GUIDE}): use provisioner: cluster-autoscaler",
            )
        ],
    ),
    # EFA as the EC2 user guide lays it out for the type (catalog efa_cards_by_size): no finding.
    "ultraserver-with-efa": (ultraserver(efa=True), [STATIC_CAPACITY]),
    "ultraserver-labelled-for-a-compute-domain": (
        ultraserver(labels={"resource.nvidia.com/computeDomain": "train"}),
        [
            STATIC_CAPACITY,
            (
                "E",
                "pool.labels: 'resource.nvidia.com/computeDomain' is written by the NVIDIA DRA "
                "driver per ComputeDomain (its IMEX daemons select it), and it refuses a claim on "
                "a node labelled for another domain: remove it",
            ),
        ],
    ),
    # With the driver, its own 1.34 rule speaks (branch dra's GP-DRA-01); without it, this one.
    "ultraserver-on-1.32-without-the-driver": (
        ultraserver(
            cluster={"kubernetes_version": "1.32"}, gpu_software=None, compute_domains="none"
        ),
        [
            (
                "E",
                "pool.compute_domains: 'none' with p6e-gb200.36xlarge: the GPUs of an "
                "UltraServer's instances share one NVLink domain only through IMEX, which the "
                f"NVIDIA DRA driver's ComputeDomains run ({GUIDE}): remove compute_domains (the "
                "default is dra-driver here)",
            ),
            (
                "E",
                "pool.instance_types: p6e-gb200.36xlarge needs Kubernetes 1.33 or newer on EKS "
                f"({GUIDE}), and the NVIDIA DRA driver it needs runs on 1.34 or newer; the "
                "cluster runs 1.32: set cluster.kubernetes_version to 1.34 or newer",
            ),
        ],
    ),
    # Not a version: the app's own rule names it, and no traceback.
    "ultraserver-on-no-version": (
        ultraserver(
            cluster={"kubernetes_version": "1.x"}, gpu_software=None, compute_domains="none"
        ),
        [
            (
                "E",
                "pool.compute_domains: 'none' with p6e-gb200.36xlarge: the GPUs of an "
                "UltraServer's instances share one NVLink domain only through IMEX, which the "
                f"NVIDIA DRA driver's ComputeDomains run ({GUIDE}): remove compute_domains (the "
                "default is dra-driver here)",
            ),
            (
                "E",
                "cluster.kubernetes_version: '1.x' is not supported; choose one of 1.32, 1.33, "
                "1.34, 1.35, 1.36",
            ),
        ],
    ),
    "ultraserver-on-1.33-without-the-driver": (
        ultraserver(
            cluster={"kubernetes_version": "1.33"}, gpu_software=None, compute_domains="none"
        ),
        [
            (
                "E",
                "pool.compute_domains: 'none' with p6e-gb200.36xlarge: the GPUs of an "
                "UltraServer's instances share one NVLink domain only through IMEX, which the "
                f"NVIDIA DRA driver's ComputeDomains run ({GUIDE}): remove compute_domains (the "
                "default is dra-driver here)",
            ),
        ],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected


@pytest.mark.parametrize(
    ("max_size", "count", "expected"),
    [
        (18, 18, []),
        (
            9,
            18,
            [
                (
                    "W",
                    f"pool.max_size: 9, but UltraServer block {BLOCK} (cdk.context.json) holds 18 "
                    "instances, every one billed for the block's length and part of its NVLink "
                    "domain: set 18",
                )
            ],
        ),
        # More than the block holds is every Capacity Block's rule (GP-TRAIN-17), not twice.
        (
            18,
            9,
            [
                (
                    "W",
                    f"pool.max_size: 18, but reservation {BLOCK} (cdk.context.json) holds 9 "
                    "instances: launches beyond them fail; set 9",
                )
            ],
        ),
    ],
    ids=["whole-block", "part-of-the-block", "beyond-the-block"],
)
def test_an_ultraserver_pool_is_sized_as_its_block(max_size, count, expected):
    settings = load_settings(ultraserver(max_size=max_size), None)
    facts = ReservationFacts(BLOCK, "us-east-1a", "p6e-gb200.36xlarge", count)
    found = check_settings(settings, plan_pools(settings), reservations={"gpu": facts}).all()
    assert [("E" if f.error else "W", str(f)) for f in documented(found)] == [
        STATIC_CAPACITY,
        *expected,
    ]
