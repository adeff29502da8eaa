"""Karpenter 1.15's DRA support (issue #37): a Karpenter pool with `gpu_software: dra-driver`
scales from zero because the controller chart gets `settings.enableDRA`, checked against the
chart's own values.yaml at 1.15.0 (tests/fixtures/karpenter-chart-1.15.0); its nodes, and only
the DRA pools' nodes, run the DRA driver's kubelet plugin; the API server judges its NodePool
and EC2NodeClass by Karpenter's own CRDs in tests/e2e/test_karpenter_crds.py."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_pool.plan.dra import DRA_RELEASE
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import load_settings
from tests.support.cfn import helm_values, resources
from tests.support.helm import leaf_paths
from tests.support.paths import FIXTURES
from tests.support.settings import KARPENTER_DRA

HELM = "Custom::AWSCDK-EKS-HelmChart"
POOL_LABEL = "gpu-pool.io/pool"
CHART_VALUES = yaml.safe_load(
    (FIXTURES / "karpenter-chart-1.15.0" / "values.yaml").read_text(encoding="utf-8")
)
# What the chart refuses beside enableDRA (values.yaml: "It can't be combined with any of
# those values"; templates/_helpers.tpl "karpenter.dra" fails the render when one is set).
EXCLUSIVE_WITH_ENABLE_DRA = (
    ("ignoreDRARequests",),
    ("awsFeatureGates", "draNVIDIAGPU"),
    ("awsFeatureGates", "draEFA"),
)


def release(template, name: str) -> dict[str, Any]:
    (chart,) = [r for r in resources(template, HELM).values() if r["Properties"]["Release"] == name]
    return chart


def karpenter_settings(template) -> dict[str, Any]:
    return helm_values(release(template, "karpenter"))["settings"]  # type: ignore[no-any-return]


def test_enable_dra_only_on_a_cluster_with_a_karpenter_dra_pool(
    karpenter_dra_template, karpenter_template
):
    with_dra = karpenter_settings(karpenter_dra_template)
    assert with_dra["enableDRA"] is True
    # Beside the repair gates its pools' repair turns on (plan/repair.py).
    assert sorted(with_dra) == [
        "awsFeatureGates",
        "clusterName",
        "enableDRA",
        "featureGates",
        "interruptionQueue",
    ]
    assert "enableDRA" not in karpenter_settings(karpenter_template)


# Values whose keys are the user's (a label map); the chart's own default holds other keys.
FREE_FORM = {("nodeSelector",)}


def _in_chart(path: tuple[str, ...]) -> bool:
    """Whether the chart's values.yaml has `path`, or a free-form map on the way to it (a
    default of {} such as controller.resources, or a label map)."""
    node: Any = CHART_VALUES
    for depth, key in enumerate(path):
        if node == {} or path[:depth] in FREE_FORM:
            return True
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def test_every_value_is_a_key_of_the_1_15_chart_and_enable_dra_stands_alone(
    karpenter_dra_template,
):
    values = helm_values(release(karpenter_dra_template, "karpenter"))
    assert [p for p in leaf_paths(values) if not _in_chart(p)] == []
    settings = values["settings"]
    assert CHART_VALUES["settings"]["enableDRA"] is False  # the chart's default: off
    for path in EXCLUSIVE_WITH_ENABLE_DRA:
        assert _in_chart(("settings", *path))
        assert path[0] not in settings or path[-1] not in settings[path[0]]


def test_one_driver_release_whose_kubelet_plugin_selects_exactly_the_dra_pools(
    karpenter_dra_template,
):
    """Karpenter's DRA page: keep DRA and device-plugin NodePools apart by label and select
    them in each chart. Each pool's nodes carry its own gpu-pool.io/pool label; the driver's
    kubelet plugin selects the DRA pools' (the Karpenter one and the node-group one) and the
    device plugin release is the device-plugin pool's alone."""
    values = helm_values(release(karpenter_dra_template, DRA_RELEASE))
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": ["dra", "nodes"]}]}
    ]
    plugins = [
        r
        for r in resources(karpenter_dra_template, HELM).values()
        if r["Properties"]["Chart"] == "nvidia-device-plugin"
    ]
    assert [helm_values(p)["nodeSelector"][POOL_LABEL] for p in plugins] == ["plugin"]


@pytest.fixture(scope="module")
def karpenter_plans():
    settings = load_settings(KARPENTER_DRA, None)
    return {p.name: p.karpenter for p in plan_pools(settings) if p.karpenter is not None}


def test_the_dra_node_pool_carries_its_pool_label(karpenter_plans):
    """The API server's verdict on both objects: tests/e2e/test_karpenter_crds.py."""
    plan = karpenter_plans["dra"]
    node_pool = plan.node_pool()
    assert node_pool["spec"]["template"]["metadata"]["labels"][POOL_LABEL] == "dra"
    node_class = plan.ec2_node_class(
        role="gpu-pool-karpenter-node",
        subnet_ids=["subnet-0123456789abcdef0"],
        security_group_ids=["sg-0123456789abcdef0"],
        tags={},
    )
    # Karpenter's DRA page: leave networkInterfaces unset on a DRA pool's EC2NodeClass.
    assert "networkInterfaces" not in node_class["spec"]
