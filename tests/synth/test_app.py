"""The app as users run it: `cdk synth` through the pinned CLI, good and bad settings."""

import json
import os
import subprocess
import sys

import pytest

from tests.support.messages import POOL_KEYS
from tests.support.paths import ROOT

CDK = ROOT / "node_modules" / ".bin" / "cdk"


def run_app(tmp_path, *context):
    """app.py as the CDK CLI runs it: context from cdk.json plus -c pairs, output to tmp."""
    context_json = json.loads((ROOT / "cdk.json").read_text())["context"]
    for pair in context:
        key, value = pair.split("=", 1)
        context_json[key] = value
    env = {
        **os.environ,
        "PATH": f"{CDK.parent}:{os.environ['PATH']}",  # the pinned Node.js, as the CLI runs it
        "CDK_OUTDIR": str(tmp_path),
        "CDK_CONTEXT_JSON": json.dumps(context_json),
    }
    return subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_bad_config_file_exits_non_zero_with_the_message_and_no_traceback(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("pool:\n  instance_types: [g4ad.xlarge]\n  max_sise: 3\n")
    result = run_app(tmp_path / "out", f"config={config}")
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        "gpu-pool: configuration error",
        f"  pool.max_sise: unknown setting; did you mean 'max_size'? (valid: {POOL_KEYS})",
    ]
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "out").glob("*.template.json"))


@pytest.mark.cli_synth
@pytest.mark.skipif(not CDK.exists(), reason="pinned CDK CLI not installed (run ./dev test)")
def test_cdk_synth_with_a_rule_violation_fails_through_the_cli(tmp_path):
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"pool": {"instance_types": ["g4ad.xlarge"]}}))
    env = {
        **os.environ,
        "PATH": f"{ROOT / '.venv' / 'bin'}:{CDK.parent}:{os.environ['PATH']}",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }
    result = subprocess.run(
        [str(CDK), "synth", "--no-notices", "-o", str(tmp_path / "out"), "-c", f"config={config}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode != 0
    assert "pool.instance_types[0]: 'g4ad.xlarge' carries AMD Radeon Pro V520" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_misspelt_config_key_is_refused_not_ignored(tmp_path):
    """#39 item 4: `-c confg=FILE` synthesized the default app without a word."""
    config = tmp_path / "prod.yaml"
    config.write_text("pool:\n  max_size: 2\n")
    result = run_app(tmp_path / "out", f"confg={config}")
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        "gpu-pool: configuration error",
        "  -c confg: unknown context key; did you mean 'config'? (gpu-pool reads -c "
        "config=FILE or DIR, and the 'gpu-pool' key of cdk.json)",
    ]
    assert not list((tmp_path / "out").glob("*.template.json"))


def test_an_empty_config_file_is_said_by_the_synth_and_the_default_app_built(tmp_path):
    """#53 item 13: `-c config=FILE` naming a file with no settings still builds the default
    app, and the synth's report (what `cdk synth` prints) says the file held nothing."""
    config = tmp_path / "cluster.yaml"
    config.write_text("# pool:\n#   max_size: 4\n")
    result = run_app(tmp_path / "out", f"config={config}")
    assert result.returncode == 0, result.stderr
    report = (tmp_path / "out" / "validation-report.json").read_text()
    assert (
        f"config: '{config}' holds no settings (empty, or every line commented out): the "
        "cdk.json context and the defaults apply; is it the right file?"
    ) in report
    assert list((tmp_path / "out").glob("GpuPool.template.json"))
