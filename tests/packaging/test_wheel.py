"""The wheel as another project installs it: what it declares covers what it imports, and a
fresh venv holding only that runs the public API and the command.

Run by `./dev test` as its own step (`pytest -m wheel`): it builds the wheel and installs it
with uv, from uv's cache after the first run.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gpu_pool import _EXPORTS
from gpu_pool.cli.main import CLI_EXTRA_MODULES
from gpu_pool.model.versions import KUBERNETES_RELEASES
from tests.support.paths import ROOT

pytestmark = pytest.mark.wheel

BIN = Path(sys.executable).parent
# Lambda code shipped as an asset: it runs on Lambda's Python, whose runtime carries boto3.
LAMBDA_PACKAGES = ("gpu_pool.cdk.nodegroups.handler",)
CLI_ENTRY = ("gpu_pool.cli.main", "gpu_pool.__main__")
# What the CDK CLI plugin runs (cdk-plugin/index.js, `python3 -m`), with the [cli] extra as the
# command is (docs/library.md).
LOOKUP_ENTRY = tuple(f"gpu_pool.lookups.{m}" for m in ("offerings", "quotas", "eks_cluster"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
    )
    (built,) = out.glob("gpu_pool-*.whl")
    return built


def _modules(wheel: Path) -> dict[str, ast.Module]:
    """The wheel's Python modules by dotted name, parsed."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            name.removesuffix(".py").removesuffix("/__init__").replace("/", "."): ast.parse(
                archive.read(name)
            )
            for name in archive.namelist()
            if name.startswith("gpu_pool/") and name.endswith(".py")
        }


def _imports(tree: ast.Module) -> set[str]:
    """Every absolute module an `import` or `from ... import` names, at any depth."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _graph(wheel: Path) -> dict[str, set[str]]:
    graph = {name: _imports(tree) for name, tree in _modules(wheel).items()}
    # cdk/cluster/eks.py imports the kubectl layer of the cluster's minor by name (each is ~35 MB).
    graph["gpu_pool.cdk.cluster.eks"] |= {r.kubectl_layer_module for r in KUBERNETES_RELEASES.values()}
    return graph


def _reachable(graph: dict[str, set[str]], roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen or module not in graph:
            continue
        seen.add(module)
        todo += graph[module]
    return seen


def _distribution_of_file() -> dict[Path, str]:
    files = {}
    for dist in importlib.metadata.distributions():
        for file in dist.files or []:
            files[Path(str(dist.locate_file(file))).resolve()] = canonicalize_name(
                dist.metadata["Name"]
            )
    return files


def _third_party(modules: set[str], graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """{distribution: the modules importing it} for the imports of `modules`."""
    owners = _distribution_of_file()
    result: dict[str, set[str]] = {}
    for module in modules:
        for name in graph[module]:
            top = name.split(".")[0]
            if top == "gpu_pool" or top in sys.stdlib_module_names or top == "__future__":
                continue
            spec = importlib.util.find_spec(name) if _is_module(name) else None
            spec = spec or importlib.util.find_spec(top)
            assert spec is not None and spec.origin, f"{module} imports {name}, not installed"
            result.setdefault(owners[Path(spec.origin).resolve()], set()).add(module)
    return result


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _requirements(wheel: Path) -> dict[str | None, set[str]]:
    """Requires-Dist by extra (None: the base install)."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    by_extra: dict[str | None, set[str]] = {}
    for line in lines:
        if line.startswith("Requires-Dist: "):
            requirement = Requirement(line.removeprefix("Requires-Dist: "))
            extra = (
                str(requirement.marker).split("==")[-1].strip(" \"'")
                if requirement.marker
                else None
            )
            by_extra.setdefault(extra, set()).add(canonicalize_name(requirement.name))
    return by_extra


def test_declared_dependencies_cover_the_import_graph_and_nothing_else(wheel):
    graph = _graph(wheel)
    library = _reachable(graph, set(_EXPORTS.values()))
    cli = _reachable(graph, {*CLI_ENTRY, *LOOKUP_ENTRY}) - library
    assert set(LOOKUP_ENTRY) <= cli
    declared = _requirements(wheel)
    library_needs = _third_party(library, graph)
    cli_needs = _third_party(cli, graph)

    missing = {d: m for d, m in library_needs.items() if d not in declared[None]}
    assert missing == {}, "library imports a distribution the wheel does not require"
    missing = {d: m for d, m in cli_needs.items() if d not in declared[None] | declared["cli"]}
    assert missing == {}, "the command imports a distribution neither base nor [cli] requires"
    assert declared[None] == set(library_needs), "base requirements nothing imports"
    assert declared["cli"] == set(cli_needs) - declared[None], "[cli] requirements unused"
    assert set(declared) == {None, "cli"}


def test_the_wheel_ships_type_information_and_the_lambda_code(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"gpu_pool/py.typed", "gpu_pool/cdk/nodegroups/handler/index.py"} <= names
    assert LAMBDA_PACKAGES[0] in _modules(wheel)


def test_the_command_names_exactly_the_modules_of_the_cli_extra(wheel):
    """The command tells a missing [cli] module from a bug by this list."""
    assert set(CLI_EXTRA_MODULES) == _requirements(wheel)["cli"]


def test_a_venv_with_only_the_declared_dependencies_runs_the_api_and_the_command(wheel, tmp_path):
    """Without [cli] the command says what to install; with it, it runs."""
    venv = tmp_path / "venv"
    subprocess.run(
        [str(BIN / "uv"), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True
    )
    python = venv / "bin" / "python"
    command = str(venv / "bin" / "gpu-pool")

    def install(requirement: str) -> None:
        # The app's exact pins as constraints: the same versions CI tests, from uv's cache.
        subprocess.run(
            [
                str(BIN / "uv"),
                "pip",
                "install",
                "--quiet",
                "--python",
                str(python),
                "--constraint",
                str(ROOT / "requirements.txt"),
                requirement,
            ],
            check=True,
        )

    install(f"gpu-pool @ {wheel.as_uri()}")
    without_extra = subprocess.run(
        [command, "doctor", "--cdk-json", str(ROOT / "cdk.json")], capture_output=True, text=True
    )
    assert (without_extra.returncode, without_extra.stdout, without_extra.stderr) == (
        2,
        "",
        "gpu-pool: doctor needs the [cli] extra: pip install 'gpu-pool[cli]'\n",
    )

    install(f"gpu-pool[cli] @ {wheel.as_uri()}")
    imported = subprocess.run(
        [
            str(python),
            "-c",
            "import gpu_pool; print(len([getattr(gpu_pool, n) for n in gpu_pool.__all__]))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert imported.stdout.strip() == str(len(_EXPORTS))
    help_text = subprocess.run([command, "--help"], capture_output=True, text=True, check=True)
    assert help_text.stdout.startswith("usage: gpu-pool")
