"""`gpu-pool doctor`: check a running pool without launching anything: one cluster (the
settings' or --stack's), or every cluster of a cloud assembly (--cdk-out), each through its
kubeconfig context and its account's AWS profile (verdicts.py and fleet.py beside this)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpu_pool.cli.command import Command, Services
from gpu_pool.cli.credentials import (
    account_profiles,
    aws_clients,
    aws_clients_of_profile,
    check_profiles_exist,
)
from gpu_pool.cli.errors import CliError
from gpu_pool.cli.kube import add_cluster_options, kube_contexts, kubernetes_clients, located
from gpu_pool.cli.pool_options import add_source_options, pools_of
from gpu_pool.cli.sources import Pools


def add_options(command: argparse.ArgumentParser) -> None:
    add_source_options(command, fleet=True)
    add_cluster_options(command)
    # Every cluster of an assembly (--cdk-out): docs/verify-and-doctor.md, "Every cluster of
    # an app".
    command.add_argument("--output", choices=("table", "json"), default="table")
    command.add_argument(
        "--profile", help="with --cdk-out: the AWS profile for every cluster (default: AWS_PROFILE)"
    )
    command.add_argument(
        "--account-profile",
        action="append",
        default=[],
        metavar="ACCOUNT=PROFILE",
        help="with --cdk-out: the AWS profile for the clusters of one account (repeat)",
    )


def run(args: argparse.Namespace, services: Services) -> int:
    if args.cdk_out:
        return _doctor_fleet(args, services)
    args.stack = _one_stack(args)
    from gpu_pool.cli.commands.doctor.verdicts import doctor_verdicts, format_verdicts

    pools = pools_of(args, services.aws)
    cluster = located(args, pools.cluster(), pools.account())
    core, apps, custom = kubernetes_clients(args, cluster)
    verdicts = doctor_verdicts(
        core,
        apps,
        pools.records,
        cluster[0],
        services.aws or aws_clients(cluster[1]),
        custom=custom,
        metrics=pools.metrics,
    )
    print(format_verdicts(verdicts))
    return 1 if any(v.status == "fail" for v in verdicts) else 0


def _one_stack(args: argparse.Namespace) -> str | None:
    """doctor without --cdk-out: one cluster, at most one --stack, no fleet options."""
    fleet = [
        option
        for option, given in (
            ("--output json", args.output == "json"),
            ("--profile", args.profile is not None),
            ("--account-profile", bool(args.account_profile)),
            ("--stack (repeated)", len(args.stack or []) > 1),
        )
        if given
    ]
    if fleet:
        raise CliError(
            f"doctor: {', '.join(fleet)}: with --cdk-out DIR (every cluster of an assembly); "
            "one cluster's doctor uses the environment's AWS credentials (AWS_PROFILE)"
        )
    return args.stack[0] if args.stack else None


def _doctor_fleet(args: argparse.Namespace, services: Services) -> int:
    from gpu_pool.cli.commands.doctor.fleet import (
        FAILING,
        doctor_fleet,
        fleet_clusters,
        fleet_json,
        fleet_table,
    )
    from gpu_pool.cli.commands.doctor.verdicts import format_verdicts
    from gpu_pool.cli.sources import assembly_stacks

    aws = services.aws
    if args.config:
        raise CliError("--config: settings are not read with --cdk-out or --stack; drop one")
    profiles = account_profiles(args.account_profile)
    if aws is None:
        check_profiles_exist(args.profile, profiles.values())
    clusters = fleet_clusters(assembly_stacks(Path(args.cdk_out)), args.stack or ())
    if not clusters:
        raise Pools([], f"the pool records in '{args.cdk_out}'").no_pools()
    if args.context and len(clusters) > 1:
        raise CliError(
            "--context: the assembly has several clusters; each is checked through the context "
            "named by its ARN (aws eks update-kubeconfig writes it)"
        )
    contexts, current = kube_contexts(args)
    reports = doctor_fleet(
        clusters,
        # An explicit --context (one cluster) is used whatever the kubeconfig holds.
        contexts=() if args.context else contexts,
        current_context=args.context or current,
        connect=lambda cluster, context: kubernetes_clients(
            argparse.Namespace(**{**vars(args), "context": context}),
            (cluster.name or "", cluster.region),
        ),
        aws_for=(lambda profile, region: aws) if aws else aws_clients_of_profile,
        profiles=profiles,
        profile=args.profile,
        kubeconfig=args.kubeconfig,
    )
    if args.output == "json":
        print(json.dumps(fleet_json(reports), indent=2))
    else:
        for report in reports:
            cluster = report.cluster
            where = ", ".join(
                [cluster.region or "Region unknown", f"account {cluster.account or 'unknown'}"]
            )
            print(f"== {cluster.label} ({where}; stacks {', '.join(cluster.stacks)})")
            print(format_verdicts(list(report.checks)))
        print()
        print(fleet_table(reports))
    return 1 if any(report.verdict in FAILING for report in reports) else 0


COMMAND = Command("doctor", "check the running pool without launching anything", add_options, run)
