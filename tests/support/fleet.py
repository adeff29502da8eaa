"""A three-cluster fleet (two accounts, three Regions) synthesized by app.py as the CDK CLI runs
it (its main(), with the context the CLI hands over), with the availability-zones lookup of each environment cached (tests/support/looked_up.py)."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import time
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
        relayed.wait_until_quiet()
    return AppRun(code, relayed.getvalue().decode("utf-8"))


class _Relayed(io.BytesIO):
    """The bytes of app.py's sys.stderr: Python's prints, and what aws-cdk-lib's synth prints in
    Node.js (its validation report, console.error), which jsii relays from a thread of its own
    into sys.stderr.buffer, so it can arrive after the synth returned. Leaving the redirect
    before it does printed the report into the next test's captured stderr."""

    def __init__(self) -> None:
        super().__init__()
        self.last_write = time.monotonic()

    def write(self, data) -> int:  # type: ignore[override]
        self.last_write = time.monotonic()
        return super().write(data)

    def wait_until_quiet(self, quiet: float = 0.3, limit: float = 10.0) -> None:
        """Return once nothing has come for `quiet` seconds (the relay writes each console line
        within milliseconds of the synth's; `limit` bounds a stuck one)."""
        start = time.monotonic()
        while time.monotonic() - max(self.last_write, start) < quiet:
            if time.monotonic() - start > limit:
                return
            time.sleep(0.05)


def synth_fleet(folder: Path) -> Path:
    """The fleet's cloud assembly directory."""
    (folder / "research.yaml").write_text(RESEARCH_FILE, encoding="utf-8")
    (folder / "fleet.yaml").write_text(FLEET, encoding="utf-8")
    result = run_app(folder, str(folder / "fleet.yaml"), zone_lookups())
    assert result.returncode == 0, result.stderr
    return folder / "out"
