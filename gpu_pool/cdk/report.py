"""Findings turned into what a synth shows: ConfigError for errors, CDK warnings otherwise."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Annotations
from constructs import Construct

from gpu_pool.model.findings import Finding
from gpu_pool.settings import ConfigError


def report(scope: Construct, findings: Iterable[Finding]) -> None:
    """Raise ConfigError listing every error; attach each warning to `scope`."""
    findings = list(findings)
    errors = [f for f in findings if f.error]
    if errors:
        raise ConfigError("\n".join(str(f) for f in errors))
    for finding in findings:
        Annotations.of(scope).add_warning_v2(f"gpu-pool:{finding.setting}", str(finding))
