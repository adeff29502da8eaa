"""`gpu-pool smoke-test-manifest`: print the smoke-test pod of a pool (and a DRA pool's
ResourceClaims) as YAML, to apply by hand (gpu_pool/cli/smoke_test.py builds them)."""

from __future__ import annotations

import argparse
import sys

import yaml

from gpu_pool.cli.command import Command, Services
from gpu_pool.cli.pool_options import (
    add_pool_options,
    add_source_options,
    chosen_resource,
    pools_of,
)
from gpu_pool.cli.smoke_test import smoke_test_objects


def add_options(command: argparse.ArgumentParser) -> None:
    add_source_options(command)
    add_pool_options(command)


def run(args: argparse.Namespace, services: Services) -> int:
    pool = pools_of(args, services.aws).pool(args.pool)
    objects = smoke_test_objects(pool, resource=chosen_resource(pool, args.resource))
    sys.stdout.write(yaml.safe_dump_all(objects, sort_keys=False))
    return 0


COMMAND = Command(
    "smoke-test-manifest",
    "print the smoke-test manifests (pod; a DRA pool's claims too)",
    add_options,
    run,
)
