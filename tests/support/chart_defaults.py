"""The scheduling part of each upstream chart's values.yaml, recorded in tests/fixtures: what a
chart's pods get before the values gpu-pool passes are merged in (as Helm merges them)."""

import yaml

from tests.support.paths import FIXTURES


def _recorded(name: str):
    return yaml.safe_load((FIXTURES / f"{name}-scheduling-defaults.yaml").read_text())


DEVICE_PLUGIN_CHART_DEFAULTS = _recorded("nvidia-device-plugin")
DCGM_EXPORTER_CHART_DEFAULTS = _recorded("dcgm-exporter")
CLOUDWATCH_DCGM_EXPORTER_CHART_DEFAULTS = _recorded("cloudwatch-dcgm-exporter")
