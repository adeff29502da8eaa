#!/usr/bin/env python3
"""CDK app: a GPU node pool on EKS, configured from cdk.json context or `-c config=FILE`."""

import sys
from pathlib import Path

import aws_cdk as cdk

from gpu_pool.cdk.nag.acknowledge import apply_aws_solutions
from gpu_pool.cdk.report import report
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.checks.app import check_cli_pin
from gpu_pool.settings import CONTEXT_KEY, ConfigError, load_settings_with_warnings


def main() -> int:
    app = cdk.App()
    try:
        settings, file_warnings = load_settings_with_warnings(
            app.node.try_get_context(CONTEXT_KEY), app.node.try_get_context("config")
        )
        report(app, file_warnings + check_cli_pin(Path(__file__).resolve().parent / "package.json"))
        GpuPoolStack(app, settings.stack_name, settings=settings)
        apply_aws_solutions(app)
    except ConfigError as err:
        # A settings mistake: the message says what to change; a traceback would only hide it.
        print("gpu-pool: configuration error", file=sys.stderr)
        for line in str(err).splitlines():
            print(f"  {line}", file=sys.stderr)
        return 1
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
