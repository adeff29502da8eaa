"""Asking the project's CDK CLI plugin (cdk-plugin/) for a context value as the CDK CLI does
(`init` with registerContextProviderAlpha, then the provider's getValue), with the pinned
Node.js and no AWS credentials anywhere: what a synth without credentials gets."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

NODE = ROOT / "node_modules" / ".bin" / "node"
_DRIVER = """
const plugin = require(process.argv[1]);
const providers = {};
plugin.init({ registerContextProviderAlpha: (name, provider) => { providers[name] = provider; } });
providers[process.argv[3]].getValue(JSON.parse(process.argv[2])).then(
  (value) => process.stdout.write(JSON.stringify({ value })),
  (err) => process.stdout.write(JSON.stringify({ error: err.message })),
);
"""


def ask_without_credentials(tmp_path: Path, provider: str, props: dict[str, Any]) -> Any:
    """The plugin's answer ({"value": ...} or {"error": message}) for `provider`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(tmp_path),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        PYTHONPATH=str(ROOT),
        PATH=os.pathsep.join([str(ROOT / ".venv" / "bin"), env["PATH"]]),
    )
    done = subprocess.run(
        [str(NODE), "-e", _DRIVER, str(ROOT / "cdk-plugin"), json.dumps(props), provider],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)
