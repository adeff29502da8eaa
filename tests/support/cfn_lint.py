"""cfn-lint over a synthesized template, with the project's ignore list (.cfnlintrc.yaml, which
./dev test applies to the app's templates), in us-east-1."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Sequence
from typing import Any

import yaml

from tests.support.paths import ROOT


def cfn_lint(
    template: dict[str, Any], *, also_ignore: Sequence[str] = (), project_ignores: bool = True
) -> list[str]:
    """cfn-lint's findings on `template`, each as it prints them; `also_ignore`: rule ids this
    template's shape accepts besides the project's (W3010 where the settings list zones);
    `project_ignores=False`: every rule, .cfnlintrc.yaml's ignore list too."""
    from cfnlint.api import ManualArgs, lint

    ignored = yaml.safe_load((ROOT / ".cfnlintrc.yaml").read_text(encoding="utf-8"))
    project = ignored["ignore_checks"] if project_ignores else []
    config = ManualArgs(ignore_checks=[*project, *also_ignore], regions=["us-east-1"])
    # cfn-lint also reads .cfnlintrc.yaml from the working directory, whose template glob
    # (cdk.out) does not exist before a synth: lint from an empty one.
    with tempfile.TemporaryDirectory() as empty, contextlib.chdir(empty):
        return [str(m) for m in lint(json.dumps(template), config=config)]
