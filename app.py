#!/usr/bin/env python3
"""CDK app: a GPU node pool on EKS, configured from cdk.json context or `-c config=FILE`."""

import sys
from pathlib import Path

import aws_cdk as cdk

from gpu_pool.checks import check_cli_pin, report
from gpu_pool.nag import apply_aws_solutions
from gpu_pool.settings import CONTEXT_KEY, ConfigError, load_settings
from gpu_pool.stack import GpuPoolStack


def main() -> int:
    app = cdk.App()
    try:
        settings = load_settings(
            app.node.try_get_context(CONTEXT_KEY), app.node.try_get_context("config")
        )
        report(app, check_cli_pin(Path(__file__).resolve().parent / "package.json"))
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
