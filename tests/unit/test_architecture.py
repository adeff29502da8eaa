"""The layers of gpu_pool/ (pyproject.toml [tool.importlinter]): imports only go down, no cycles,
no CDK in the pure layers or the command. A broken contract names the import that breaks it.
And the house (#39): no module over 600 lines, each verb of the command a module of its own."""

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_pool.cli.commands import COMMANDS
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


MAX_PRODUCT_LINES = 600


def test_no_product_file_is_over_600_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / "gpu_pool").rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_PRODUCT_LINES
    }
    assert long == {}


def test_each_verb_is_a_module_of_cli_commands_with_its_options_and_run():
    for command in COMMANDS:
        module = importlib.import_module(f"gpu_pool.cli.commands.{command.name.replace('-', '_')}")
        assert module.COMMAND is command
        assert command.add_options.__module__ == command.run.__module__ == module.__name__
