"""Warnings a settings file accepts (`acknowledge`): gone from the synth, the others kept."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Annotations, Match

from tests.support.cfn import synth_stack, unvalidated_app

pytestmark = pytest.mark.synth

# One warm node per group (GP-POOL-26) and a taint without a value (GP-POOL-17).
WARM_POOL = {
    "min_size": 1,
    "desired_size": 1,
    "taints": [{"key": "nvidia.com/gpu", "value": "true"}, {"key": "dedicated"}],
}


def _warning_ids(settings):
    found = Annotations.from_stack(synth_stack(settings)).find_warning("*", Match.any_value())
    return sorted(
        str(entry.entry.data).rsplit("[ack: gpu-pool:", 1)[1].rstrip("]")
        for entry in found
        if "[ack: gpu-pool:" in str(entry.entry.data)
    )


def test_an_acknowledged_warning_is_not_reported_and_the_others_are():
    assert _warning_ids({"pool": WARM_POOL}) == ["GP-POOL-17", "GP-POOL-26"]
    acknowledged = {
        "pool": WARM_POOL,
        "acknowledge": {"GP-POOL-26": "one warm node keeps the demo's first pod fast"},
    }
    assert _warning_ids(acknowledged) == ["GP-POOL-17"]


def test_the_validation_report_no_longer_lists_an_acknowledged_warning(tmp_path):
    """With the app's cdk.json flag `@aws-cdk/core:annotationsInValidationReport`, a synth
    prints warnings in its validation report, each with `Acknowledge with 'Annotation::<id>'`:
    the settings key is how a config file does that (the report's annotations are a plugin of
    their own, beside aws-cdk-lib's template validation, which this test does not read)."""
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import load_settings

    app = unvalidated_app(
        context={"@aws-cdk/core:annotationsInValidationReport": True}, outdir=str(tmp_path)
    )
    settings = {"pool": WARM_POOL, "acknowledge": {"GP-POOL-26": "a warm node for the demo"}}
    GpuPoolStack(app, "GpuPool", settings=load_settings(settings, None))
    app.synth()
    report = (tmp_path / "validation-report.json").read_text(encoding="utf-8")
    assert "Annotation::gpu-pool:GP-POOL-17" in report
    assert "GP-POOL-26" not in report
