"""The EFA DRA driver (`efa_software: dra-driver`): its refusals, one case per rule with the
exact message users read, the one-EFA-advertiser-per-node rule, and the plan of the cluster's
one aws-dranet release (tests/synth/test_efa_dra.py synthesizes and renders it)."""

from dataclasses import replace

import pytest

from gpu_pool.checks import efa_dra
from gpu_pool.checks.efa_dra import check_one_efa_advertiser_per_node
from gpu_pool.model.versions import KARPENTER
from gpu_pool.plan.efa_dra import efa_dra_chart
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings
from tests.support import rules
from tests.support.rules import documented

EFA = {"instance_types": ["p5.48xlarge"], "zones": ["us-east-1a"], "efa": True}
EFA_DRA = {**EFA, "efa_software": "dra-driver"}
# A node-group EFA DRA pool keeps a node (GP-EFA-06: Cluster Autoscaler cannot start it).
KEEPS_A_NODE = {"min_size": 1, "desired_size": 1}
KARPENTER_HUGEPAGES = (
    "W",
    "pool.efa: true with provisioner: karpenter, which counts only an instance "
    "type's own capacity, and hugepages are not part of it (they enter only through "
    f"a NodeOverlay, alpha and off by default in Karpenter {KARPENTER.version}): a pod requesting "
    "hugepages-2Mi never gets a node; let EFA pods request none and set "
    "FI_EFA_USE_HUGE_PAGE=0 in them, or use provisioner: cluster-autoscaler",
)
ZONED = {"region": "us-east-1", "account": "123456789012"}

CASES = {
    # The default stays the EFA device plugin; the driver on a node-group pool, 1.34 or later.
    "on-node-groups": ({**ZONED, "pool": {**EFA_DRA, **KEEPS_A_NODE}}, []),
    # #48 item 3: EKS's guide says 1.34, the pinned chart's README 1.35+; the driver needs only
    # 1.34's resource.k8s.io/v1, so 1.34 passes with a warning naming both.
    "on-kubernetes-1.34": (
        {**ZONED, "cluster": {"kubernetes_version": "1.34"}, "pool": {**EFA_DRA, **KEEPS_A_NODE}},
        [
            (
                "W",
                "pool.efa_software: 'dra-driver' on Kubernetes 1.34: EKS's guide (\"Manage EFA "
                "devices on Amazon EKS\") supports the EFA DRA driver on 1.34, but the pinned "
                "aws-dranet chart's README asks for 1.35 or later; what the driver uses "
                "(resource.k8s.io/v1 device attributes and capacity, a claim's network data) 1.34 "
                "serves, but the chart is not documented there: prefer cluster.kubernetes_version "
                "1.35 or later",
            )
        ],
    ),
    "on-kubernetes-1.35": (
        {**ZONED, "cluster": {"kubernetes_version": "1.35"}, "pool": {**EFA_DRA, **KEEPS_A_NODE}},
        [],
    ),
    # With the NVIDIA DRA driver too, GP-DRA-10 alone says it.
    "with-the-gpu-dra-driver": (
        {**ZONED, "pool": {**EFA_DRA, **KEEPS_A_NODE, "gpu_software": "dra-driver"}},
        [],
    ),
    "from-zero": (
        {**ZONED, "pool": EFA_DRA},
        [
            (
                "E",
                "pool.min_size: 0 with efa_software dra-driver: Cluster Autoscaler builds an "
                "empty node group's template node without ResourceSlices (kubernetes/autoscaler "
                "cluster-autoscaler-1.36.1 cloudprovider/aws/aws_cloud_provider.go:423), so a "
                "pod's EFA claim fits no empty group and the group never gets its first node: "
                "set min_size (and desired_size) 1 or more, or use efa_software: device-plugin",
            )
        ],
    ),
    "without-efa": (
        {"pool": {"efa_software": "dra-driver"}},
        [
            (
                "E",
                "pool.efa_software: 'dra-driver' without efa: true: the pool's nodes get no EFA "
                "interface for the driver to advertise: set efa: true, or remove efa_software",
            )
        ],
    ),
    "on-kubernetes-1.33": (
        {**ZONED, "cluster": {"kubernetes_version": "1.33"}, "pool": {**EFA_DRA, **KEEPS_A_NODE}},
        [
            (
                "E",
                "pool.efa_software: 'dra-driver' on Kubernetes 1.33: the EFA DRA driver needs "
                "resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the driver "
                "on 1.34 or later): set cluster.kubernetes_version to 1.34 or later, or use "
                "efa_software: device-plugin",
            )
        ],
    ),
    # Karpenter attaches EFAs for a pod's dra.net claims only with settings.enableDRA (and
    # any Karpenter EFA pool gets GP-KARP-06's hugepages warning).
    # With it, Karpenter's DRA settings are on (draEFA among them) and the driver reaches the
    # NodePool's nodes by their pool label (no GP-EFA-04).
    "on-karpenter-with-the-gpu-dra-driver": (
        {
            **ZONED,
            "pool": {"provisioner": "karpenter", "gpu_software": "dra-driver", **EFA_DRA},
        },
        [KARPENTER_HUGEPAGES],
    ),
    "on-karpenter-without-the-gpu-dra-driver": (
        {**ZONED, "pool": {"provisioner": "karpenter", **EFA_DRA}},
        [
            KARPENTER_HUGEPAGES,
            (
                "E",
                "pool.efa_software: 'dra-driver' with provisioner: karpenter and no "
                "gpu_software: dra-driver: Karpenter launches a node for a pod's EFA claims "
                "(its draEFA gate) only with settings.enableDRA, which gpu-pool turns on for "
                'Karpenter pools with gpu_software: dra-driver (karpenter.sh "Utilizing GPUs '
                'and EFAs with Dynamic Resource Allocation"): set gpu_software: dra-driver '
                "too, or use efa_software: device-plugin",
            ),
        ],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected


def efa_plan(name="gpu", setting="pools.a", **settings):
    return plan_pool(PoolSettings(name=name, **{**EFA_DRA, **settings}), setting)


def test_an_efa_dra_pool_gets_no_efa_device_plugin_and_the_default_does():
    assert efa_plan().efa_chart is None
    assert efa_plan(efa_software="device-plugin").efa_chart is not None


def test_the_driver_and_an_efa_device_plugin_on_one_node_are_an_error():
    """Plans with one name (what a duplicate name would make; GP-PAIR-01 stops it first): the
    driver selects the name, so it reaches the device-plugin pool's nodes, where that pool's
    EFA device plugin runs too."""
    dra = efa_plan(setting="pools.a")
    plugin = efa_plan(setting="pools.b", efa_software="device-plugin")
    found = documented(check_one_efa_advertiser_per_node([dra, plugin], plugin))
    assert [str(f) for f in found] == [
        "pools.b: p5.48xlarge nodes of pool 'gpu' would run both the EFA DRA driver and the EFA "
        "device plugin of pool 'gpu'; EKS forbids the two on one node (\"Manage EFA devices on "
        'Amazon EKS"): a node must run exactly one of them',
        "pools.b: p5.48xlarge nodes of pool 'gpu' would run both the EFA DRA driver and the EFA "
        "device plugin of pool 'gpu'; EKS forbids the two on one node (\"Manage EFA devices on "
        'Amazon EKS"): a node must run exactly one of them',
    ]


def test_a_driver_that_misses_its_pools_nodes_is_an_error(monkeypatch):
    plan = efa_plan(setting="pools.a")
    chart = efa_dra_chart([plan])
    assert chart is not None
    lost = replace(chart, device_plugin_pod={"nodeSelector": {"gpu-pool.io/pool": "elsewhere"}})
    monkeypatch.setattr(efa_dra, "efa_dra_chart", lambda plans: lost)
    (finding,) = documented(check_one_efa_advertiser_per_node([plan], plan))
    assert str(finding).startswith(
        "pools.a.instance_types[0]: the EFA DRA driver would not run on p5.48xlarge nodes of "
        "pool 'gpu' (labels {"
    )
    assert str(finding).endswith(
        "}); they would publish no dra.net ResourceSlice and EFA claims would stay unallocated"
    )


def test_one_release_serves_every_efa_dra_pool_in_name_order_and_no_other():
    taint = {"key": "team", "value": "b", "effect": "NoExecute"}
    a = efa_plan("a", "pools.a")
    b = efa_plan("b", "pools.b", taints=[taint])
    other = efa_plan("c", "pools.c", efa_software="device-plugin")
    chart = efa_dra_chart([other, b, a])
    assert chart is not None
    assert (chart.release, chart.pin.chart, chart.version, chart.pin.namespace) == (
        "aws-dranet",
        "aws-dranet",
        "1.0.0",
        "kube-system",
    )
    assert chart.values == {
        "supportedInstanceLabels": {"keys": ["gpu-pool.io/pool"], "values": ["a", "b"]},
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "team", "operator": "Exists", "effect": "NoExecute"},
        ],
    }
