"""Every rule id gpu-pool reports, read from the calls that report them.

A rule is reported by one `error("GP-...", setting, message)` or `warning(...)` call in the
package (model/findings.py); reading those calls (their syntax tree, not their text) is the one
list of rules there is, so a new rule needs no second entry anywhere. Settings use its levels to
accept acknowledgements of warnings only (`acknowledge`, settings/models.py); tools/rule_index.py
writes docs/guardrails.md's index from the same rules. The package's source files are read, not
imported: this layer still depends on nothing above it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Rule:
    """One reported rule: its id, level ("error" or "warning"), the setting it names and its
    message as the reader sees them (`{...}` for what is computed), and where it is reported
    (path from the package's parent directory, and line)."""

    id: str
    level: str
    setting: str
    message: str
    where: str


@cache
def rules() -> tuple[Rule, ...]:
    """`read_rules()`, once per process."""
    return read_rules()


def read_rules() -> tuple[Rule, ...]:
    """Every error/warning call in the package, in id order (area, then number), read from the
    package's syntax trees (about half a second; `rules()` keeps the answer)."""
    found = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _nodes(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("error", "warning")
                and len(node.args) == 3
                and isinstance(node.args[0], ast.Constant)
            ):
                found.append(
                    Rule(
                        id=str(node.args[0].value),
                        level=node.func.id,
                        setting=_text(node.args[1]),
                        message=_text(node.args[2]),
                        where=f"{path.relative_to(_PACKAGE.parent)}:{node.lineno}",
                    )
                )
    return tuple(sorted(found, key=lambda r: (r.id.rsplit("-", 1)[0], int(r.id.rsplit("-", 1)[1]))))


# The copies of each function that mutation testing (mutmut, `./dev mutate`) writes beside it,
# each with one change (a rule id among them): `x_<function>__mutmut_<n>`. Its
# `..._mutmut_orig` is the function as written, and is read.
_MUTANT = re.compile(r"__mutmut_\d+$")


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` but those of a mutation testing copy of a function."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _MUTANT.search(node.name):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


@cache
def rule_levels() -> dict[str, str]:
    """Rule id -> "error" or "warning", for every rule the package reports."""
    return {rule.id: rule.level for rule in rules()}


def _text(node: ast.expr) -> str:
    """A string argument as the reader sees it: literal parts, `{...}` for the rest."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(v.value) if isinstance(v, ast.Constant) else "{...}" for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return "{...}"
