#!/usr/bin/env python3
"""CDK app: GPU node pools on EKS, configured from cdk.json context and `-c config=FILE` (one
cluster), `-c config=DIR` or a fleet file (a stack per cluster: docs/fleet.md; a fleet file's
`pipeline:` makes the app that pipeline's stack instead: docs/pipeline.md)."""

import sys
from pathlib import Path

import aws_cdk as cdk

from gpu_pool.cdk.nag.acknowledge import apply_aws_solutions
from gpu_pool.cdk.pipeline import GpuPoolPipeline
from gpu_pool.cdk.report import report
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.checks.app import check_cli_pin
from gpu_pool.settings import (
    CONFIG_KEY,
    CONTEXT_KEY,
    ConfigError,
    check_context_keys,
    read_fleet,
)

ROOT = Path(__file__).resolve().parent


def main(app: cdk.App | None = None) -> int:
    """Synthesize `app` (default: the App the CDK CLI's context and output directory make)."""
    app = app or cdk.App()
    try:
        check_context_keys(app.node.get_all_context())
        context = app.node.try_get_context
        # Every cluster's problems at once: the files' and, of the clusters that loaded, their
        # rules' (a stack raises them), each led by its file; one never hides another's.
        fleet, problems = read_fleet(context(CONTEXT_KEY), context(CONFIG_KEY))
        report(app, [*fleet.warnings, *check_cli_pin(ROOT / "package.json")])
        if fleet.pipeline is None:
            for cluster in fleet.clusters:
                try:
                    GpuPoolStack(app, cluster.stack_name, settings=cluster.settings)
                except ConfigError as err:
                    problems.append(cluster.about(str(err)))
        elif not problems:
            # The fleet file's pipeline deploys the clusters: the app is its stack alone (it
            # reports every cluster's rule errors together, each led by its stack name).
            clusters = [cluster.settings for cluster in fleet.clusters]
            pipeline = fleet.pipeline
            GpuPoolPipeline(app, pipeline.stack_name, settings=pipeline, clusters=clusters)
        if problems:
            raise ConfigError("\n".join(problems))
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
