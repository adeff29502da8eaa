"""`./dev`'s toolchain setup (#29 item 5) says each step and what it waits for, instead of
about 80 silent seconds. Run on a copy of the script whose python3 and npm are stand-ins that
create what the real ones would (.venv/bin/python, node_modules/.bin/{cdk,node})."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from tests.support.paths import ROOT


def _script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("dev", "requirements.txt", "requirements-dev.txt", "package-lock.json"):
        shutil.copy(ROOT / name, project / name)
    stubs = tmp_path / "bin"
    # python3 -m venv .venv: a venv whose python accepts the pip install.
    _script(stubs / "python3", 'mkdir -p "$3/bin"; printf "#!/bin/sh\\n" >"$3/bin/python"; '
            'chmod +x "$3/bin/python"\n')
    # npm ci: the CDK CLI (here a no-op synth) and Node.js.
    _script(
        stubs / "npm",
        "mkdir -p node_modules/.bin\n"
        'printf "#!/bin/sh\\n" >node_modules/.bin/cdk\n'
        'printf "#!/bin/sh\\necho v24.21.0\\n" >node_modules/.bin/node\n'
        "chmod +x node_modules/.bin/cdk node_modules/.bin/node\n",
    )
    env = {"PATH": f"{stubs}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp_path)}
    return project, env


def _setup_lines(project: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        ["bash", "./dev", "synth"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("==> setup")]


def test_the_first_setup_says_each_step_and_what_it_waits_for(tmp_path):
    project, env = _project(tmp_path)
    lines = _setup_lines(project, env)
    assert lines[:-1] == [
        "==> setup (first run): 3 steps, skipped next time while those files stay the same",
        "==> setup 1/3 venv: creating .venv (python3 -m venv)",
        "==> setup 2/3 pip: installing requirements-dev.txt into .venv (aws-cdk-lib and jsii, "
        "the kubectl layers, boto3, kubernetes, the test and lint tools); waiting on PyPI: the "
        "longest step",
        "==> setup 3/3 npm: npm ci: the pinned CDK CLI and Node.js from package-lock.json into "
        "node_modules; waiting on the npm registry",
    ]
    assert lines[-1].startswith("==> setup: done in ")
    assert lines[-1].endswith("s; Node.js v24.21.0 from node_modules")
    # Nothing changed: no setup, no lines.
    assert _setup_lines(project, env) == []


def test_a_changed_requirement_says_why_setup_runs_again(tmp_path):
    project, env = _project(tmp_path)
    _setup_lines(project, env)
    with (project / "requirements.txt").open("a") as requirements:
        requirements.write("# changed\n")
    lines = _setup_lines(project, env)
    assert lines[:2] == [
        "==> setup (requirements*.txt or package-lock.json changed): 3 steps, skipped next time "
        "while those files stay the same",
        "==> setup 1/3 venv: .venv exists, kept",
    ]


def test_synth_prints_the_plan_not_the_template(tmp_path):
    """#39 item 6: `./dev synth` printed the whole template (1,700 lines) before the plan. It
    synthesizes with --quiet (the templates stay in cdk.out) and prints `gpu-pool plan --cdk-out
    cdk.out` (#29 item 1) on stdout."""
    project, env = _project(tmp_path)
    _setup_lines(project, env)
    _script(
        project / "node_modules/.bin/cdk",
        'mkdir -p cdk.out; echo \'{}\' >cdk.out/manifest.json; [[ " $* " == *" --quiet "* ]] '
        "|| echo 'Resources: {}'\n",
    )
    _script(project / ".venv/bin/gpu-pool", 'echo "gpu-pool $*"\n')
    done = subprocess.run(
        ["bash", "./dev", "synth"], cwd=project, env=env, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (0, "gpu-pool plan --cdk-out cdk.out\n")
    assert done.stderr.splitlines()[-1] == (
        "==> templates in cdk.out/; gpu-pool plan --cdk-out cdk.out: what each pool builds"
    )
