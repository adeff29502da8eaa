"""Asking the project's CDK CLI plugin (cdk-plugin/) for a context value as the CDK CLI does
(`init` with registerContextProviderAlpha, then the provider's getValue), with the pinned
Node.js: in a given environment, or with no AWS credentials anywhere (what a synth without
credentials gets)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

NODE = ROOT / "node_modules" / ".bin" / "node"
PLUGIN = ROOT / "cdk-plugin"
# Loads the plugin as the CLI's PluginHost does (`init(host)`, then the provider registered
# under the name argv[2]) and calls it with the lookup's props from stdin: what it resolves, or
# its error.
_DRIVER = """
const plugin = require(process.argv[1]);
const providers = {};
if (plugin.version !== '1') throw new Error('not a CDK CLI plugin of version 1');
plugin.init({ registerContextProviderAlpha: (name, provider) => { providers[name] = provider; } });
// The app the CLI runs inherits this process's environment: the plugin says it is loaded.
if (process.env.GPU_POOL_CDK_PLUGIN !== '1') throw new Error('GPU_POOL_CDK_PLUGIN not set');
let input = '';
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  providers[process.argv[2]].getValue(JSON.parse(input)).then(
    (value) => process.stdout.write(JSON.stringify({ value })),
    (err) => process.stdout.write(JSON.stringify({ error: err.message })),
  );
});
"""


def ask(provider: str, props: dict[str, Any], env: Mapping[str, str]) -> Any:
    """The plugin's answer ({"value": ...} or {"error": message}) for `provider`, run from the
    project directory as the CLI runs it, in environment `env`."""
    done = subprocess.run(
        [str(NODE), "-e", _DRIVER, str(PLUGIN), provider],
        input=json.dumps(props),
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def ask_without_credentials(tmp_path: Path, provider: str, props: dict[str, Any]) -> Any:
    """The plugin's answer for `provider` where no AWS credentials are anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(tmp_path),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        PYTHONPATH=str(ROOT),
        PATH=os.pathsep.join([str(ROOT / ".venv" / "bin"), env["PATH"]]),
    )
    return ask(provider, props, env)
