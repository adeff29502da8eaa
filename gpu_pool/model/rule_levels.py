"""Every rule id gpu-pool reports, with its level, read from the calls that report them.

A rule is reported by one `error("GP-...", ...)` or `warning("GP-...", ...)` call in the package
(model/findings.py); reading those calls is the one list of rules there is, so a new rule needs
no second entry here. Settings use it to accept acknowledgements of warnings only
(`acknowledge`, settings/models.py); docs/guardrails.md's index is generated the same way.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent
_REPORTED = re.compile(r"\b(error|warning)\(\s*\"(GP-[A-Z]+-[0-9]{2})\"")


@cache
def rule_levels() -> dict[str, str]:
    """Rule id -> "error" or "warning", for every rule the package reports."""
    return {
        rule: level
        for path in sorted(_PACKAGE.rglob("*.py"))
        for level, rule in _REPORTED.findall(path.read_text(encoding="utf-8"))
    }
