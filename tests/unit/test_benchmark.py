"""tools/benchmark.py (`./dev bench`) runs from its entry point to its last table: each synth,
pytest and the fresh clone's `./dev test` stand in for a subprocess that writes a one-resource
template and takes one second of a fake clock, so a tool broken anywhere in its flow fails
here, not on the next person's bench (#48 item 8: the suite's table was defined below the
`__main__` guard and the bench stopped with a NameError after the fleet's rows)."""

from __future__ import annotations

import json
import runpy
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT


class FakeRuns:
    """subprocess.run and the clocks the bench reads: every run one second."""

    def __init__(self) -> None:
        self.now = 0.0
        self.commands: list[list[str]] = []

    def clock(self) -> float:
        return self.now

    def run(self, command: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        self.commands.append(command)
        self.now += 1.0
        env = kwargs.get("env")
        if isinstance(env, dict) and "CDK_OUTDIR" in env:
            context = json.loads(env.get("CDK_CONTEXT_JSON", "{}"))
            fleet = Path(context["config"]) if "config" in context else None
            stacks = len(json.loads(fleet.read_text())["clusters"]) if fleet else 1
            for index in range(stacks):
                template = Path(env["CDK_OUTDIR"]) / f"Stack{index}.template.json"
                template.write_text(json.dumps({"Resources": {"Cluster": {}}}))
        if command[1:] == ["-m", "tests.e2e.harness.latency"]:
            # The real Cluster Autoscaler's figures, as the latency run prints them.
            figures = {"decision_s": 37.7, "running_s": 40.4, "idle_before_removal_s": 345.7}
            return subprocess.CompletedProcess(command, 0, json.dumps(figures) + "\n", "")
        return subprocess.CompletedProcess(command, 0, b"", b"")


def test_the_bench_prints_every_table_through_the_suite_s(monkeypatch, tmp_path, capsys):
    runs = FakeRuns()
    monkeypatch.setattr(subprocess, "run", runs.run)
    monkeypatch.setattr(time, "perf_counter", runs.clock)
    monkeypatch.setattr(time, "monotonic", runs.clock)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(SystemExit) as status:
        runpy.run_path(str(ROOT / "tools" / "benchmark.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert status.value.code == 0, out
    assert (
        "| default pool (g5.xlarge, 0 -> 1 -> 0) | 37.7 s | 40.4 s | 5.8 min |\n" in out
    )
    assert out.endswith(
        "| suite | wall time | target |\n"
        "|---|---|---|\n"
        "| pytest, 2 workers | 1 s | < 90 s |\n"
        "| e2e, warm | 1 s | < 90 s |\n"
        "| ./dev test, fresh clone | 1 s | < 390 s |\n"
    )
    assert runs.commands[-5][1:3] == ["-m", "pytest"]
    assert runs.commands[-4][1:] == ["-m", "tests.e2e.harness.build"]
    assert runs.commands[-3][1:] == [
        "-m",
        "pytest",
        "-q",
        "-n",
        "2",
        "--dist",
        "loadfile",
        "-m",
        "e2e",
        "tests/e2e",
    ]
    assert runs.commands[-2][:2] == ["git", "clone"]
    assert runs.commands[-1] == ["bash", ".ci/run"]
