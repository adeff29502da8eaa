"""The `gpu-pool` command: plan, verify, doctor, smoke-test-manifest, replacements.

Also `python -m gpu_pool`. The pools come from the same place as the bundled stack's: the
`gpu-pool` key of cdk.json, with --config FILE merged over it; or, for any app built with the
pool constructs, from the records they write (--cdk-out DIR: a cloud assembly; --stack NAME: a
deployed stack's outputs). `replacements` reads templates, not settings.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gpu_pool.cli.commands import replacements as replacements_command
from gpu_pool.cli.commands.replacements import REPLACEMENTS
from gpu_pool.cli.credentials import (
    account_profiles,
    aws_clients,
    aws_clients_of_profile,
    check_profiles_exist,
    configured_region,
)
from gpu_pool.cli.errors import CliError
from gpu_pool.cli.files import json_object
from gpu_pool.cli.smoke_test import smoke_resources, smoke_test_objects
from gpu_pool.cli.sources import Pools, assembly_pools, settings_pools, stack_pools
from gpu_pool.plan.record import PoolRecord
from gpu_pool.settings import CONTEXT_KEY, ConfigError, Fleet, read_fleet

if TYPE_CHECKING:
    from gpu_pool.cli.verify import Clock

PLAN = "plan"
REPLACEMENTS_ONLY = ("--deployed", "--new", "--yes")
# The top-level modules of the `cli` extra (pyproject.toml; the wheel test checks they match).
# The entry point is installed without them, so a command that needs one says what to install.
CLI_EXTRA_MODULES = frozenset({"kubernetes", "boto3", "botocore", "urllib3"})

__all__ = ["CliError", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-pool", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    # `plan` was this command's first name, then its deprecated alias; it now prints the plan.
    replacements_help = (
        "before a deploy: name the node groups, network and cluster resources it would "
        "replace or delete, and Auto Mode turned off, and ask (offline: --deployed and --new; "
        f"'{PLAN}' was its name until it became the pools' plan)"
    )
    replacements = sub.add_parser(
        REPLACEMENTS, help=replacements_help, description=replacements_help
    )
    replacements.add_argument(
        "--new", metavar="TEMPLATE", help="the new template (with --deployed)"
    )
    replacements.add_argument(
        "--deployed", metavar="TEMPLATE", help="the deployed template (offline)"
    )
    replacements.add_argument(
        "--cdk-out",
        metavar="DIR",
        help="every stack in this cloud assembly against its deployed template in CloudFormation",
    )
    replacements.add_argument(
        "--stack", metavar="NAME", help="with --cdk-out: only this stack (default: every one)"
    )
    replacements.add_argument("--yes", action="store_true", help="confirm without asking")
    for name, help_text in (
        (PLAN, "what the pools build, per cluster and pool, and their on-demand cost at max size"),
        ("verify", "launch the smoke-test pod and follow it to Succeeded"),
        ("doctor", "check the running pool without launching anything"),
        ("smoke-test-manifest", "print the smoke-test manifests (pod; a DRA pool's claims too)"),
    ):
        command = sub.add_parser(name, help=help_text)
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
            + ("; doctor: every cluster of it" if name == "doctor" else ""),
        )
        # With --cdk-out, --stack chooses stacks of the assembly (doctor: repeated).
        command.add_argument(
            "--stack",
            metavar="NAME",
            help="the pools recorded in this deployed stack's outputs, not the settings; with "
            "--cdk-out: only this stack of the assembly"
            + (" (repeat)" if name == "doctor" else ""),
            action="append" if name == "doctor" else "store",
        )
        if name == PLAN:
            command.add_argument("--output", choices=("table", "json"), default="table")
            # The replacements check's options, from when `plan` was its name: refused with
            # the new name, so that an old deploy script stops instead of printing a plan.
            for option in REPLACEMENTS_ONLY:
                command.add_argument(option, help=argparse.SUPPRESS, nargs="?", const=True)
            continue
        if name != "doctor":
            command.add_argument(
                "--pool", help="the pool to test (default: the only one; doctor checks all)"
            )
            command.add_argument(
                "--resource",
                help="what the smoke pod asks one of (default: nvidia.com/gpu, or the pool's "
                "share: nvidia.com/gpu.shared, or its MIG layout's first profile; a DRA pool's: "
                "the DeviceClass gpu.nvidia.com)",
            )
        if name == "smoke-test-manifest":
            continue
        command.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config")
        command.add_argument("--context", help="kubeconfig context (default: current)")
        command.add_argument("--request-timeout", type=float, default=5.0, metavar="SECONDS")
        if name == "doctor":
            _fleet_options(command)
        if name == "verify":
            command.add_argument("--namespace", default="default")
            for stage, default in (
                ("scale-up", 180),
                ("node-join", 600),
                ("node-ready", 300),
                ("gpu", 300),
                ("run", 900),
            ):
                command.add_argument(
                    f"--{stage}-timeout",
                    type=float,
                    default=default,
                    metavar="SECONDS",
                    help=f"default {default}",
                )
            command.add_argument("--poll-interval", type=float, default=5.0, metavar="SECONDS")
    return parser


def _fleet_options(doctor: argparse.ArgumentParser) -> None:
    """The options of the doctor of every cluster of an assembly (--cdk-out): docs
    verify-and-doctor.md, "Every cluster of an app"."""
    doctor.add_argument("--output", choices=("table", "json"), default="table")
    doctor.add_argument(
        "--profile", help="with --cdk-out: the AWS profile for every cluster (default: AWS_PROFILE)"
    )
    doctor.add_argument(
        "--account-profile",
        action="append",
        default=[],
        metavar="ACCOUNT=PROFILE",
        help="with --cdk-out: the AWS profile for the clusters of one account (repeat)",
    )


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


_YOUR_APPS_POOLS = (
    "read your app's pools from its cloud assembly (--cdk-out DIR, after cdk synth) or a "
    "deployed stack (--stack NAME)"
)


def _pools(args: argparse.Namespace, aws: Callable[[str], Any] | None) -> Pools:
    """The pools from --cdk-out or --stack, else from the settings."""
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
    if len(fleet.clusters) == 1 and not problems:
        return settings_pools(fleet.clusters[0].settings, app_rules=app_rules)
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
    for cluster in fleet.clusters:
        try:
            records += settings_pools(cluster.settings, app_rules=app_rules).records
        except CliError as err:
            problems.append(cluster.about(str(err)))
    if problems:
        raise CliError("\n".join(problems))
    return Pools(records, f"the settings of '{args.config}'")


def _resource(pool: PoolRecord, name: str | None) -> str | None:
    """The resource named by --resource, if the pool's nodes advertise it."""
    advertised = smoke_resources(pool)
    if name is not None and name not in advertised:
        raise CliError(
            f"--resource: pool '{pool.name}' does not advertise '{name}' "
            f"(it advertises: {', '.join(advertised)})"
        )
    return name


def _kubernetes(args: argparse.Namespace, cluster: tuple[str, str | None]) -> tuple[Any, Any, Any]:
    """CoreV1, AppsV1 and CustomObjects (Karpenter's objects) clients, after proving the API
    server answers within the timeout."""
    import urllib3
    from kubernetes import client

    _load_kubeconfig(args, cluster)
    configuration = client.Configuration.get_default_copy()
    configuration.retries = 0
    api = client.ApiClient(configuration)
    try:
        client.VersionApi(api).get_code(_request_timeout=args.request_timeout)
    except client.ApiException as err:
        raise CliError(
            f"the API server at {configuration.host} refused us: {err.status} {err.reason}"
        ) from None
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise CliError(
            f"cannot reach the Kubernetes API at {configuration.host} within "
            f"{args.request_timeout:g}s ({type(err).__name__}); check the kubeconfig context, "
            "the cluster's endpoint access and your network"
        ) from None
    return client.CoreV1Api(api), client.AppsV1Api(api), client.CustomObjectsApi(api)


class _Errors(logging.Handler):
    """Collects the errors logged while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _load_kubeconfig(args: argparse.Namespace, cluster: tuple[str, str | None]) -> None:
    """Load the kubeconfig as kubectl would, or say what to do: a missing file is named with
    the command that writes it. The client only logs a failing credential command (an
    `ERROR:root:` line) and goes on without a token, so that error is caught and raised."""
    from kubernetes import config

    location, files = _kubeconfig_files(args)
    if not any(os.path.isfile(file) for file in files):
        name, region = cluster
        # An environment-agnostic stack deploys into the AWS CLI's configured region.
        region = region or configured_region()
        command = f"aws eks update-kubeconfig --name {name} --region {region or 'REGION'}"
        if args.kubeconfig:
            command += f" --kubeconfig {args.kubeconfig}"
        if region is None:
            command += " (REGION: the stack's; neither the pools nor the AWS config name one)"
        missing = ", ".join(map(repr, files))
        raise CliError(f"kubeconfig: no file at {missing}; create it with: {command}")
    errors = _Errors()
    # Attached to the root logger, it also keeps logging from printing them itself.
    logging.root.addHandler(errors)
    try:
        config.load_kube_config(config_file=location, context=args.context)
    except (config.ConfigException, OSError) as err:
        raise CliError(f"kubeconfig: {err}") from None
    finally:
        logging.root.removeHandler(errors)
    if errors.messages:
        # "exec: process returned 255. <its stderr>", or the OSError of a missing command.
        lines = [line.strip() for line in errors.messages[0].splitlines() if line.strip()]
        detail = lines[0].removeprefix("exec: ")
        if len(lines) > 1:
            detail += f" ... {lines[-1]}"
        raise CliError(
            "kubeconfig: the credential command (the user's exec, such as aws eks get-token) "
            f"failed: {detail}"
        )


def _kubeconfig_files(args: argparse.Namespace) -> tuple[str, list[str]]:
    """Where the kubeconfig is read, and the files that names: as the client reads it, a list
    of files, of which those that exist are merged."""
    location = args.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    return location, [os.path.expanduser(part) for part in location.split(os.pathsep) if part]


def main(
    argv: Sequence[str] | None = None,
    aws: Callable[[str], Any] | None = None,
    clock: Clock | None = None,
) -> int:
    """`aws` (a boto3 client factory) and `clock` (verify's time) default to the real ones;
    tests pass stubs."""
    args = _parser().parse_args(argv)
    try:
        if args.command == REPLACEMENTS:
            return replacements_command.run(args, aws)
        if args.command == PLAN:
            _refuse_replacements_options(args)
        if args.command == "doctor":
            if args.cdk_out:
                return _doctor_fleet(args, aws)
            args.stack = _one_stack(args)
        pools = _pools(args, aws)
        if args.command == PLAN:
            return _plan(args, pools)
        if args.command == "smoke-test-manifest":
            pool = pools.pool(args.pool)
            objects = smoke_test_objects(pool, resource=_resource(pool, args.resource))
            sys.stdout.write(yaml.safe_dump_all(objects, sort_keys=False))
            return 0
        if args.command == "doctor":
            return _doctor(args, pools, aws)
        pool = pools.pool(args.pool)
        return _verify(args, pools, pool, _resource(pool, args.resource), aws, clock)
    except (ConfigError, CliError) as err:
        print(f"gpu-pool: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] not in CLI_EXTRA_MODULES:
            raise
        print(
            f"gpu-pool: {args.command} needs the [cli] extra: pip install 'gpu-pool[cli]'",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("gpu-pool: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`gpu-pool plan | head`): stop without a traceback, with a shell's
        # status for SIGPIPE. Python would report the pipe again when it flushes stdout at
        # exit, so stdout goes nowhere from here.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _plan(args: argparse.Namespace, pools: Pools) -> int:
    from gpu_pool.cli.plan import plan_json, plan_table
    from gpu_pool.plan.summary import pool_summary

    if not pools.records:
        raise pools.no_pools()
    summaries = [pool_summary(record) for record in pools.records]
    if args.output == "json":
        print(json.dumps(plan_json(summaries), indent=2))
    else:
        print(plan_table(summaries))
    # Here, not at exit, so that a reader gone early (`| head`) ends in main's BrokenPipeError.
    sys.stdout.flush()
    return 0


def _refuse_replacements_options(args: argparse.Namespace) -> None:
    given = [o for o in REPLACEMENTS_ONLY if getattr(args, o.removeprefix("--")) is not None]
    if given:
        raise CliError(
            f"{PLAN}: {', '.join(given)}: options of 'gpu-pool {REPLACEMENTS}', which '{PLAN}' "
            f"used to run; '{PLAN}' now prints the pools' plan: run 'gpu-pool {REPLACEMENTS}' "
            "with the same options"
        )


def _doctor(args: argparse.Namespace, pools: Pools, aws: Callable[[str], Any] | None) -> int:
    from gpu_pool.cli.doctor import doctor_verdicts, format_verdicts

    cluster = pools.cluster()
    core, apps, custom = _kubernetes(args, cluster)
    verdicts = doctor_verdicts(
        core,
        apps,
        pools.records,
        cluster[0],
        aws or aws_clients(cluster[1]),
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


def _doctor_fleet(args: argparse.Namespace, aws: Callable[[str], Any] | None) -> int:
    from gpu_pool.cli.doctor import format_verdicts
    from gpu_pool.cli.fleet import FAILING, doctor_fleet, fleet_clusters, fleet_json, fleet_table
    from gpu_pool.cli.sources import assembly_stacks

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
    contexts, current = _kube_contexts(args)
    reports = doctor_fleet(
        clusters,
        # An explicit --context (one cluster) is used whatever the kubeconfig holds.
        contexts=() if args.context else contexts,
        current_context=args.context or current,
        connect=lambda cluster, context: _kubernetes(
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


def _kube_contexts(args: argparse.Namespace) -> tuple[set[str], str | None]:
    """The kubeconfig's context names and its current context (none without a kubeconfig)."""
    from kubernetes import config

    location, files = _kubeconfig_files(args)
    if not any(os.path.isfile(file) for file in files):
        return set(), None
    try:
        contexts, current = config.list_kube_config_contexts(config_file=location)
    except (config.ConfigException, OSError):
        return set(), None
    return {c["name"] for c in contexts}, (current or {}).get("name")


def _verify(
    args: argparse.Namespace,
    pools: Pools,
    pool: PoolRecord,
    resource: str | None,
    aws: Callable[[str], Any] | None,
    clock: Clock | None,
) -> int:
    from gpu_pool.cli.verify import Timeouts, Verifier

    cluster = pools.cluster(pool)
    core, apps, custom = _kubernetes(args, cluster)
    aws = aws or aws_clients(cluster[1])
    timeouts = Timeouts(
        scale_up=args.scale_up_timeout,
        node_join=args.node_join_timeout,
        node_ready=args.node_ready_timeout,
        gpu=args.gpu_timeout,
        run=args.run_timeout,
        poll=args.poll_interval,
    )
    verifier = Verifier(
        core,
        apps,
        pool,
        cluster[0],
        args.namespace,
        timeouts,
        autoscaling=aws("autoscaling") if aws else None,
        custom=custom,
        clock=clock,
        resource=resource,
        # Only a pool reserved by id has a reservation to read.
        ec2=aws("ec2") if aws and pool.reservation_id else None,
    )
    return verifier.run()
