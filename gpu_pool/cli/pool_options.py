"""The options by which plan, verify, doctor and smoke-test-manifest find their pools: the
bundled app's settings (--cdk-json, with --config merged over it), a cloud assembly (--cdk-out)
or a deployed stack (--stack); and, for the commands that test one pool, --pool and
--resource."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpu_pool.cli.credentials import aws_clients
from gpu_pool.cli.errors import CliError
from gpu_pool.cli.files import json_object
from gpu_pool.cli.smoke_test import smoke_resources
from gpu_pool.cli.sources import (
    Pools,
    assembly_pools,
    settings_pools,
    stack_pools,
    synth_warning,
)
from gpu_pool.plan.record import PoolRecord
from gpu_pool.settings import CONTEXT_KEY, Fleet, read_fleet

PLAN = "plan"
_YOUR_APPS_POOLS = (
    "read your app's pools from its cloud assembly (--cdk-out DIR, after cdk synth) or a "
    "deployed stack (--stack NAME)"
)


def add_source_options(command: argparse.ArgumentParser, *, fleet: bool = False) -> None:
    """--cdk-json, --config, --cdk-out and --stack; `fleet` (doctor): --cdk-out checks every
    cluster of the assembly and --stack repeats."""
    command.add_argument("--cdk-json", default="cdk.json", help="default: ./cdk.json")
    command.add_argument(
        "--config",
        help="settings file merged over cdk.json (YAML/JSON); plan also takes a fleet "
        "(a directory of them, or a fleet file: docs/fleet.md)",
    )
    command.add_argument(
        "--cdk-out",
        metavar="DIR",
        help="the pools recorded in this cloud assembly (cdk synth's output), not the settings"
        + ("; doctor: every cluster of it" if fleet else ""),
    )
    # With --cdk-out, --stack chooses stacks of the assembly (doctor: repeated).
    command.add_argument(
        "--stack",
        metavar="NAME",
        help="the pools recorded in this deployed stack's outputs, not the settings; with "
        "--cdk-out: only this stack of the assembly" + (" (repeat)" if fleet else ""),
        action="append" if fleet else "store",
    )


def add_pool_options(command: argparse.ArgumentParser) -> None:
    """--pool and --resource: the pool a smoke test runs on and what its pod asks for."""
    command.add_argument(
        "--pool", help="the pool to test (default: the only one; doctor checks all)"
    )
    command.add_argument(
        "--resource",
        help="what the smoke pod asks one of (default: nvidia.com/gpu, or the pool's "
        "share: nvidia.com/gpu.shared, or its MIG layout's first profile; a DRA pool's: "
        "the DeviceClass gpu.nvidia.com)",
    )


def chosen_resource(pool: PoolRecord, name: str | None) -> str | None:
    """The resource named by --resource, if the pool's nodes advertise it."""
    advertised = smoke_resources(pool)
    if name is not None and name not in advertised:
        raise CliError(
            f"--resource: pool '{pool.name}' does not advertise '{name}' "
            f"(it advertises: {', '.join(advertised)})"
        )
    return name


def pools_of(
    args: argparse.Namespace,
    aws: Callable[[str], Any] | None,
    cached: Mapping[str, Any] | None = None,
) -> Pools:
    """The pools from --cdk-out or --stack, else from the settings, with the lookups `cached`
    (default: the app's cdk.context.json, beside --cdk-json)."""
    if (args.cdk_out or args.stack) and args.config:
        raise CliError("--config: settings are not read with --cdk-out or --stack; drop one")
    if args.cdk_out:
        return assembly_pools(Path(args.cdk_out), args.stack)
    if args.stack:
        aws = aws or aws_clients(None)
        if aws is None:
            raise CliError(f"--stack: no AWS credentials or region to read stack {args.stack} with")
        return stack_pools(args.stack, aws("cloudformation"))
    fleet, problems = _settings(args)
    app_rules = args.command == PLAN
    file_warnings = [synth_warning(f) for f in fleet.warnings]
    if cached is None:
        cached = cached_answers(args)
    if len(fleet.clusters) == 1 and not problems:
        (only,) = fleet.clusters
        pools = settings_pools(
            only.settings, app_rules=app_rules, cached=cached, stack_name=only.stack_name
        )
        return replace(pools, warnings=[*file_warnings, *pools.warnings])
    if args.command != PLAN and not problems:
        raise CliError(
            f"--config: '{args.config}' holds {len(fleet.clusters)} clusters "
            f"({', '.join(c.stack_name for c in fleet.clusters)}); {args.command} checks one: "
            "give --stack NAME of its deployed stack"
            + (
                f", or check them all from the synthesized app: cdk synth -c config={args.config}"
                ", then gpu-pool doctor --cdk-out cdk.out"
                if args.command == "doctor"
                else ""
            )
        )
    # A fleet's plan: every cluster's pools; every file's problems and every cluster's
    # refusals, each led by its file.
    records: list[PoolRecord] = []
    warnings = file_warnings
    notes: list[str] = []
    for cluster in fleet.clusters:
        try:
            pools = settings_pools(
                cluster.settings, app_rules=app_rules, cached=cached, stack_name=cluster.stack_name
            )
        except CliError as err:
            problems.append(cluster.about(str(err)))
            continue
        records += pools.records
        warnings += [cluster.about(w) for w in pools.warnings]
        notes += pools.notes
    if problems:
        raise CliError("\n".join(problems))
    return Pools(records, f"the settings of '{args.config}'", warnings=warnings, notes=tuple(notes))


def cached_answers(args: argparse.Namespace) -> dict[str, Any]:
    """The app's cdk.context.json (beside --cdk-json), where the CDK CLI caches its lookups
    (empty: none, or not a JSON object: the synth says what is wrong with it)."""
    try:
        path = Path(args.cdk_json).parent / "cdk.context.json"
        cached = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return cached if isinstance(cached, dict) else {}


def _settings(args: argparse.Namespace) -> tuple[Fleet, list[str]]:
    path = args.cdk_json
    if not Path(path).is_file():
        raise CliError(
            f"--cdk-json: '{path}' does not exist: run from the bundled app's directory, or "
            f"{_YOUR_APPS_POOLS}"
        )
    context = json_object(path, "--cdk-json", "a cdk.json (a JSON object)").get("context", {})
    if not isinstance(context, dict):
        raise CliError(f"--cdk-json: '{path}': its \"context\" is not a JSON object")
    app_context = context.get(CONTEXT_KEY)
    # Another app's cdk.json: its defaults would describe a pool `gpu` that app does not have.
    if app_context is None and args.config is None:
        raise CliError(
            f"--cdk-json: '{path}' has no \"{CONTEXT_KEY}\" settings, so it is not the bundled "
            f"app's: {_YOUR_APPS_POOLS}, or give the settings with --config FILE"
        )
    # read_fleet says this too, but without the file's name.
    if app_context is not None and not isinstance(app_context, dict):
        raise CliError(f"--cdk-json: '{path}': its context \"{CONTEXT_KEY}\" is not a JSON object")
    return read_fleet(app_context, args.config)
