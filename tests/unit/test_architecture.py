"""The layers of gpu_pool/ (pyproject.toml [tool.importlinter]): imports only go down, no cycles,
no CDK in the pure layers or the command. A broken contract names the import that breaks it.
And the house (#39, #48): no module over 600 lines, each verb of the command a package of its
own."""

import ast
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


def _imports_by_module() -> dict[str, set[str]]:
    """Every module of gpu_pool/ by dotted name, with the gpu_pool modules it imports (at any
    depth, type-checking imports too): `from a import b` names both a and a.b."""
    found = {}
    for path in (ROOT / "gpu_pool").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        found[name] = {i for i in imported if i.startswith("gpu_pool.")}
    return found


def test_each_verb_is_one_package_of_cli_commands_with_its_options_run_and_logic():
    """Each verb one home (#48): a package of cli/commands/ named after it, its __init__ holding
    its options and its run; its other modules are the logic only it uses, imported from nowhere
    else in gpu_pool/ (what several verbs share is in cli/, beside commands/)."""
    imports = _imports_by_module()
    verbs = set()
    for command in COMMANDS:
        name = f"gpu_pool.cli.commands.{command.name.replace('-', '_')}"
        package = importlib.import_module(name)
        assert Path(package.__file__).name == "__init__.py", f"{name}: not a package"
        assert package.COMMAND is command
        assert command.add_options.__module__ == command.run.__module__ == name
        verbs.add(name)
        own = {m for m in imports if m.startswith(f"{name}.")}
        for module in own:
            outside = {
                importer
                for importer, imported in imports.items()
                if module in imported and importer != name and importer not in own
            }
            assert outside == set(), f"{module}, the logic of one verb, imported by {outside}"
    children = {
        m for m in imports if m.startswith("gpu_pool.cli.commands.") and m.count(".") == 3
    }
    assert children == verbs, "a module of cli/commands/ that is no verb's package"
