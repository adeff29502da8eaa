"""Each settings example of the README and docs/ (tests/support/docs_examples.py) synthesizes as
the app reads it, with a workload selector for every pool it names. Environment-bound examples
are synthesized with nothing looked up, as a user without credentials does (#39 item 1;
tests/support/looked_up.py): the synth finishes, and names each fact it left unchecked with the
command that reads it. The others through the session cache (tests/support/cfn.py), which
other tests of the same example share."""

from __future__ import annotations

import json

import pytest

from gpu_pool.settings import AppSettings
from tests.support.cfn import synth
from tests.support.docs_examples import app_settings, settings_examples
from tests.support.looked_up import synth_offline

pytestmark = pytest.mark.synth


@pytest.mark.parametrize("example", settings_examples(), ids=lambda e: e.id)
def test_each_settings_example_synthesizes_a_selector_per_pool(example, tmp_path):
    settings = app_settings(example, tmp_path)
    if settings.get("account"):
        template, unchecked = synth_offline(settings)
        assert unchecked, "an environment-bound stack with nothing looked up names its facts"
        reads = ("aws ec2 describe-", "aws ssm get-parameter", "aws eks describe-cluster")
        assert all(any(r in m for r in reads) for _, m in unchecked)
        assert {rule for rule, _ in unchecked} <= {"GP-REGION-08", "GP-TRAIN-20"}
    else:
        template = synth(settings).to_json()
    selectors = [
        json.loads(output["Value"])
        for name, output in template.get("Outputs", {}).items()
        if name.endswith("NodeSelector")
    ]
    pools = AppSettings.model_validate(settings).pool_settings()
    assert sorted(s["gpu-pool.io/pool"] for s in selectors) == sorted(p.name for _, p in pools)
