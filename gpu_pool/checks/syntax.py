"""Syntax the systems that consume our settings enforce: Kubernetes label keys and values,
exact versions (zone names: model/aws_names.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from gpu_pool.model.findings import Finding, error
from gpu_pool.model.versions import EXACT_VERSION

LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
QUALIFIED_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?" + LABEL_NAME + "$"
)
LABEL_VALUE = re.compile(r"^(" + LABEL_NAME + ")?$")
VALID_KEY = "an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.'"
VALID_VALUE = "up to 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"


def exact_versions(prefix: str, versions: dict[str, str | None]) -> Iterator[Finding]:
    for name, value in versions.items():
        if value is not None and not EXACT_VERSION.match(value):
            yield error(
                "GP-SYNTAX-01",
                f"{prefix}.{name}",
                f"'{value}' is not an exact version; pin one such as 1.2.3 (never 'latest' or a "
                "range), or leave it unset for the tested pin in gpu_pool/model/versions.py",
            )


def pairs(mapping: Mapping[str, object]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in mapping.items())
