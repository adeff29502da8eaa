"""The layers of gpu_pool/ (pyproject.toml [tool.importlinter]): imports only go down, no cycles,
no CDK in the pure layers or the command. A broken contract names the import that breaks it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT


def lint_imports(root):
    """import-linter over the gpu_pool package under `root`, with the project's contracts."""
    return subprocess.run(
        [Path(sys.executable).parent / "lint-imports", "--config", str(ROOT / "pyproject.toml")],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_layer_contract_holds():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # The model layer reaching up into the plan.
        ("model/catalog.py", "import gpu_pool.plan.pool", "Layers"),
        # A rule that starts the CDK.
        ("checks/syntax.py", "import aws_cdk", "The pure layers"),
        # Two sibling modules importing each other.
        ("plan/node_template.py", "import gpu_pool.plan.pool", "No cycles"),
    ],
)
def test_an_upward_import_or_a_cycle_breaks_a_contract(tmp_path, module, line, broken):
    shutil.copytree(ROOT / "gpu_pool", tmp_path / "gpu_pool")
    target = tmp_path / "gpu_pool" / module
    target.write_text(target.read_text() + f"\n{line}\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert next(l for l in result.stdout.splitlines() if l.startswith(broken)).endswith("BROKEN")
