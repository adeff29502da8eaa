"""A three-cluster fleet (two accounts, three Regions) synthesized by app.py as the CDK CLI runs
it (its main(), with the context the CLI hands over), with the availability-zones lookup of each
environment cached (tests/support/looked_up.py)."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

PROD, RESEARCH = "111111111111", "222222222222"
# stack name -> (environment, cluster name, pool instance types)
EXPECTED = {
    "GpuPool-inference-us-east-1": (f"aws://{PROD}/us-east-1", "inference", ["g6e.xlarge"]),
    "GpuPool-inference-eu-west-1": (f"aws://{PROD}/eu-west-1", "inference", ["g6e.xlarge"]),
    "GpuPool-research-us-west-2": (f"aws://{RESEARCH}/us-west-2", "research", ["g6.xlarge"]),
}
FLEET = f"""\
defaults:
  account: '{PROD}'
  cluster: {{name: inference}}
  pool: {{instance_types: [g6e.xlarge]}}
clusters:
  - region: us-east-1
  - file: research.yaml
  - region: eu-west-1
"""
RESEARCH_FILE = f"""\
account: '{RESEARCH}'
region: us-west-2
cluster: {{name: research}}
pool: {{instance_types: [g6.xlarge]}}
"""


def zone_lookups() -> dict[str, list[str]]:
    """The cached availability-zones lookup of every environment of the fleet."""
    return {
        f"availability-zones:account={account}:region={region}": [
            f"{region}{letter}" for letter in "abc"
        ]
        for account, region in (
            environment.removeprefix("aws://").split("/") for environment, _, _ in EXPECTED.values()
        )
    }


@dataclass
class AppRun:
    returncode: int
    stderr: str


def run_app(folder: Path, config: str | None, extra: dict | None = None) -> AppRun:
    """app.py's main() as `cdk synth [-c config=CONFIG]` runs it (cdk.json's context, what the
    CLI hands the App, its strict template validation included), into folder/out. In this
    process: a fresh Python and jsii runtime per run cost several seconds each, for the same
    code."""
    import aws_cdk as cdk

    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    context.update(extra or {})
    if config is not None:
        context["config"] = config
    app = cdk.App(context=context, outdir=str(folder / "out"))
    relayed = _Relayed()
    stderr = io.TextIOWrapper(relayed, encoding="utf-8", write_through=True)
    with contextlib.redirect_stderr(stderr):
        code = runpy.run_path(str(ROOT / "app.py"))["main"](app)
        if _printed_a_report(folder / "out"):
            assert relayed.report_ended.wait(timeout=30), "the validation report never came"
    return AppRun(code, relayed.getvalue().decode("utf-8"))


# The line aws-cdk-lib ends the validation report it prints with (core/lib/private/
# synthesis-validation.js, after writing validation-report.json).
_REPORT_END = b"A copy of this report can be found in: "


def _printed_a_report(out: Path) -> bool:
    """Whether the synth printed its validation report: aws-cdk-lib does when a plugin found a
    violation or failed (cdk.json's annotationsInValidationReport makes warnings violations)."""
    path = out / "validation-report.json"
    if not path.is_file():
        return False
    reports = json.loads(path.read_text(encoding="utf-8"))["pluginReports"]
    return any(r.get("violations") or r["conclusion"] != "success" for r in reports)


class _Relayed(io.BytesIO):
    """The bytes of app.py's sys.stderr: Python's prints, and what aws-cdk-lib's synth prints in
    Node.js (its validation report, console.error), which jsii relays into sys.stderr.buffer
    from a thread of its own, so it can arrive after the synth returned. Leaving the redirect
    before it did printed the report into the next test's captured stderr."""

    def __init__(self) -> None:
        super().__init__()
        self.report_ended = threading.Event()

    def write(self, data) -> int:  # type: ignore[override]
        written = super().write(data)
        if _REPORT_END in self.getvalue():
            self.report_ended.set()
        return written


def synth_fleet(folder: Path) -> Path:
    """The fleet's cloud assembly directory."""
    (folder / "research.yaml").write_text(RESEARCH_FILE, encoding="utf-8")
    (folder / "fleet.yaml").write_text(FLEET, encoding="utf-8")
    result = run_app(folder, str(folder / "fleet.yaml"), zone_lookups())
    assert result.returncode == 0, result.stderr
    return folder / "out"
