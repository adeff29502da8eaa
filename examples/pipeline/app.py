#!/usr/bin/env python3
"""A fleet deployed by CDK Pipelines: three GPU clusters in two accounts and three Regions,
rolled out in waves by one pipeline in a tooling account (docs/pipeline.md).

fleet.yaml names the cluster files and the pipeline's settings; each cluster file is an
ordinary gpu-pool settings file. Deploy the pipeline once with `cdk deploy`; it deploys the
clusters, verifies each, and updates itself on every push from then on.
"""

import sys
from pathlib import Path

import aws_cdk as cdk

from gpu_pool.cdk.nag.acknowledge import apply_aws_solutions
from gpu_pool.cdk.pipeline import GpuPoolPipeline
from gpu_pool.settings import ConfigError, load_fleet

HERE = Path(__file__).resolve().parent


def build(app: cdk.App) -> GpuPoolPipeline:
    """The pipeline stack of fleet.yaml's clusters, checked by cdk-nag at synth."""
    fleet = load_fleet(None, str(HERE / "fleet.yaml"))
    if fleet.pipeline is None:
        raise ConfigError(f"{HERE / 'fleet.yaml'}: pipeline: missing; this app deploys a pipeline")
    clusters = [cluster.settings for cluster in fleet.clusters]
    settings = fleet.pipeline
    pipeline = GpuPoolPipeline(app, settings.stack_name, settings=settings, clusters=clusters)
    apply_aws_solutions(app)
    return pipeline


def main() -> int:
    app = cdk.App()
    try:
        build(app)
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
