"""Synthesizing an environment-bound stack as `cdk synth` does once the availability-zones lookup
is cached in cdk.context.json (the CLI's second pass, the one it deploys)."""

from __future__ import annotations

import json
from functools import cache

ACCOUNT, REGION = "123456789012", "us-east-1"
# The lookup's cached answer (cdk.context.json), us-east-1's six zones.
ZONES = [f"{REGION}{letter}" for letter in "abcdef"]
LOOKUP = {f"availability-zones:account={ACCOUNT}:region={REGION}": ZONES}


@cache
def _template(key: str) -> dict:
    import aws_cdk as cdk

    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import AppSettings

    app = cdk.App(context=LOOKUP)
    stack = GpuPoolStack(app, "GpuPool", settings=AppSettings.model_validate(json.loads(key)))
    template: dict = app.synth().get_stack_by_name(stack.stack_name).template
    return template


def synth_looked_up(settings: dict) -> dict:
    """The template of these app settings with the zone lookup cached; once per session."""
    return _template(json.dumps(settings, sort_keys=True))
