"""The environment a `cdk synth` subprocess gets in the tests: as CI and a user without AWS
access run it, with this checkout's gpu_pool on the path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.support.paths import ROOT


def without_aws(home: Path) -> dict[str, str]:
    """This process's environment less every AWS_ and CDK_ variable, with an empty `home`, no
    AWS config or credentials files, no instance metadata, the venv's python first on PATH and
    this checkout (whatever the venv installed) on PYTHONPATH."""
    home.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "CDK_")) and key != "PYTHONPATH"
    }
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONPATH=str(ROOT),
        AWS_CONFIG_FILE=str(home / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    return env
