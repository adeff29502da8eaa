"""`gpu-pool plan`: what the pools build, per cluster and pool, as a table or JSON (offline:
the settings, a cloud assembly or a deployed stack's records; render.py beside this renders)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from gpu_pool.cli.command import Command, Services
from gpu_pool.cli.commands.replacements import REPLACEMENTS
from gpu_pool.cli.errors import CliError
from gpu_pool.cli.pool_options import PLAN, add_source_options, cached_answers, pools_of
from gpu_pool.model.quotas import quota_context_key, vcpu_quotas

# The replacements check's options, from when `plan` was its name.
REPLACEMENTS_ONLY = ("--deployed", "--new", "--yes")


def add_options(command: argparse.ArgumentParser) -> None:
    add_source_options(command)
    command.add_argument("--output", choices=("table", "json"), default="table")
    # Refused with the new name, so that an old deploy script stops instead of printing a plan.
    for option in REPLACEMENTS_ONLY:
        command.add_argument(option, help=argparse.SUPPRESS, nargs="?", const=True)


def run(args: argparse.Namespace, services: Services) -> int:
    from gpu_pool.cli.commands.plan.render import plan_json, plan_table
    from gpu_pool.plan.summary import pool_summary

    given = [o for o in REPLACEMENTS_ONLY if getattr(args, o.removeprefix("--")) is not None]
    if given:
        raise CliError(
            f"{PLAN}: {', '.join(given)}: options of 'gpu-pool {REPLACEMENTS}', which '{PLAN}' "
            f"used to run; '{PLAN}' now prints the pools' plan: run 'gpu-pool {REPLACEMENTS}' "
            "with the same options"
        )
    cached = cached_answers(args)
    pools = pools_of(args, services.aws, cached)
    if not pools.records:
        raise pools.no_pools()
    summaries = [
        pool_summary(record, _quota_values(cached, record.account, record.region))
        for record in pools.records
    ]
    if args.output == "json":
        print(json.dumps(plan_json(summaries, pools.warnings, pools.notes), indent=2))
    else:
        print(plan_table(summaries, pools.warnings))
        for note in pools.notes:
            print(note)
    # Here, not at exit, so that a reader gone early (`| head`) ends in main's BrokenPipeError.
    sys.stdout.flush()
    return 0


def _quota_values(
    cached: Mapping[str, Any], account: str | None, region: str | None
) -> dict[str, float]:
    """The vCPU quotas' values cached for `account` in `region`, by code."""
    if account is None or region is None:
        return {}
    values = {}
    for quota in vcpu_quotas():
        value = cached.get(quota_context_key(account, region, quota.code))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[quota.code] = float(value)
    return values


COMMAND = Command(
    PLAN,
    "what the pools build, per cluster and pool, and their on-demand cost at max size",
    add_options,
    run,
)
