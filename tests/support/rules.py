"""Running the settings rules as a synth meets them, for the guardrail tables."""

import aws_cdk as cdk
import pytest

from gpu_pool.cdk.registry import ClusterPools
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.checks.app import check_app, uses_autoscaler, uses_karpenter
from gpu_pool.checks.controllers import check_node_selector
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import ConfigError, load_settings


def findings(settings, today=None):
    """Every finding in the order a synth meets them, (E|W, message): each pool, then the app."""
    loaded = load_settings(settings, None)
    pools = ClusterPools()
    plans = plan_pools(loaded)
    found = [f for plan in plans for f in pools.add(plan)]
    found += check_app(loaded, today=today)
    if uses_autoscaler(loaded):
        found += check_node_selector(loaded.autoscaler.node_selector, plans)
    if uses_karpenter(loaded):
        found += check_node_selector(loaded.karpenter.node_selector, plans, "karpenter")
    return [("E" if f.error else "W", str(f)) for f in found]


def assert_nothing_built(settings, expected):
    """The stack raises every expected error, one per line, before it builds anything."""
    app = cdk.App()
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(app, "Bad", settings=load_settings(settings, None))
    for level, message in expected:
        if level == "E":
            assert message in str(err.value).splitlines()
    (stack,) = app.node.children
    assert stack.node.children == []
