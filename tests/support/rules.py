"""Running the settings rules as a synth meets them, for the guardrail tables."""

import re
from functools import cache

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import ConfigError, load_settings
from tests.support.paths import ROOT


@cache
def _rule_index():
    """docs/guardrails.md's rule index: each rule id and whether it is an error."""
    page = (ROOT / "docs" / "guardrails.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (GP-[A-Z]+-[0-9]{2}) \| (error|warning) \|", page, re.MULTILINE)
    return {rule: level == "error" for rule, level in rows}


def documented(found):
    """The findings, each checked to carry a rule id the guardrails page lists at the finding's
    level: users acknowledge a warning by it (`gpu-pool:<id>`) and look a rule up by it."""
    found, index = list(found), _rule_index()
    for f in found:
        assert index.get(f.rule) is f.error, f"{f.rule} ({'error' if f.error else 'warning'})"
    return found


def _found(settings, today):
    loaded = load_settings(settings, None)
    return documented(check_settings(loaded, plan_pools(loaded), today=today).all())


def findings(settings, today=None):
    """Every finding in the order a synth meets them, (E|W, message): each pool, then the app."""
    return [("E" if f.error else "W", str(f)) for f in _found(settings, today)]


def rule_ids(settings, today=None):
    """The rule id of each finding, in the order `findings` lists them."""
    return [f.rule for f in _found(settings, today)]


def assert_nothing_built(settings, expected):
    """The stack raises every expected error, one per line, before it builds anything."""
    # Imported here: the rule tables run without the CDK (./dev mutate forks its test runs).
    from gpu_pool.cdk.stack import GpuPoolStack
    from tests.support.cfn import unvalidated_app

    app = unvalidated_app()
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(app, "Bad", settings=load_settings(settings, None))
    for level, message in expected:
        if level == "E":
            assert message in str(err.value).splitlines()
    (stack,) = app.node.children
    assert stack.node.children == []
