"""Warnings a settings file accepts (`acknowledge`): gone from the synth, the others kept."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Annotations, Match

from tests.support.cfn import synth_stack

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
