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
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gpu_pool.cli.errors import CliError
from gpu_pool.cli.smoke_test import smoke_resources, smoke_test_objects
from gpu_pool.cli.sources import Pools, assembly_pools, settings_pools, stack_pools
from gpu_pool.plan.record import PoolRecord
from gpu_pool.settings import CONTEXT_KEY, ConfigError, Fleet, read_fleet

if TYPE_CHECKING:
    from gpu_pool.cli.verify import Clock

REPLACEMENTS = "replacements"
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
    context = _json_object(path, "--cdk-json", "a cdk.json (a JSON object)").get("context", {})
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


def _json_object(path: str, prefix: str, what: str) -> dict[str, Any]:
    """The JSON object in the file; a file that cannot be read or is not one is a one-line
    CliError naming it and the problem, not a traceback."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise CliError(f"{prefix}: cannot read '{path}': {err.strerror}") from None
    except UnicodeDecodeError:
        raise CliError(f"{prefix}: '{path}' is not UTF-8 text; save it as UTF-8 JSON") from None
    except json.JSONDecodeError as err:
        raise CliError(
            f"{prefix}: '{path}' is not valid JSON: {err.msg} (line {err.lineno}, column "
            f"{err.colno})"
        ) from None
    if not isinstance(data, dict):
        raise CliError(f"{prefix}: '{path}' is not {what}")
    return data


def _pools(args: argparse.Namespace, aws: Callable[[str], Any] | None) -> Pools:
    """The pools from --cdk-out or --stack, else from the settings."""
    if (args.cdk_out or args.stack) and args.config:
        raise CliError("--config: settings are not read with --cdk-out or --stack; drop one")
    if args.cdk_out:
        return assembly_pools(Path(args.cdk_out), args.stack)
    if args.stack:
        aws = aws or _aws(None)
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
        region = region or _configured_region()
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


def _configured_region() -> str | None:
    """The region of the AWS config and environment (AWS_REGION, AWS_DEFAULT_REGION, the
    profile), as the AWS CLI and CDK CLI take it; None when there is none, or when the AWS config
    cannot be read (AWS_PROFILE naming no profile): the advice then says REGION."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        region = os.environ.get("AWS_REGION") or boto3.Session().region_name
    except BotoCoreError:
        return None
    return str(region) if region else None


def _aws(region: str | None) -> Callable[[str], Any] | None:
    """A boto3 client factory, or None when there are no credentials or region, or the AWS
    config cannot be read (AWS_PROFILE naming no profile)."""
    return _aws_of_profile(None, region)


def _aws_of_profile(profile: str | None, region: str | None) -> Callable[[str], Any] | None:
    """_aws with the credentials of `profile` (None: the environment's)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        session = boto3.Session(profile_name=profile, region_name=region)
        if session.get_credentials() is None or session.region_name is None:
            return None
    except BotoCoreError:
        return None
    client: Callable[[str], Any] = session.client
    return client


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
            return _replacements(args, aws)
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
        aws or _aws(cluster[1]),
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
    profiles = _account_profiles(args.account_profile)
    if aws is None:
        _check_profiles_exist(args.profile, profiles.values())
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
        aws_for=(lambda profile, region: aws) if aws else _aws_of_profile,
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


def _account_profiles(values: Sequence[str]) -> dict[str, str]:
    """--account-profile ACCOUNT=PROFILE, repeated: account id -> profile."""
    profiles: dict[str, str] = {}
    for value in values:
        account, _, profile = value.partition("=")
        if not (len(account) == 12 and account.isdigit() and profile):
            raise CliError(
                f"--account-profile: '{value}': give ACCOUNT=PROFILE, ACCOUNT a 12-digit AWS "
                "account id and PROFILE a profile of the AWS config"
            )
        if profiles.setdefault(account, profile) != profile:
            raise CliError(
                f"--account-profile: account {account} is given two profiles "
                f"({profiles[account]}, {profile}); give one"
            )
    return profiles


def _check_profiles_exist(profile: str | None, account_profiles: Collection[str]) -> None:
    """Every profile named on the command line is one of the AWS config's: otherwise each
    cluster would only be reported unreachable, and the bad name never said (#39 item 3)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    named = [p for p in (profile, *account_profiles) if p]
    if not named:
        return
    try:
        known = set(boto3.Session().available_profiles)
    except BotoCoreError:
        known = set()
    for name in named:
        if name not in known:
            option = "--profile" if name == profile else "--account-profile"
            listed = ", ".join(sorted(known)) or "none"
            raise CliError(
                f"{option}: no AWS profile named '{name}' in the AWS config (its profiles: "
                f"{listed}); aws configure list-profiles lists them"
            )


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
    aws = aws or _aws(cluster[1])
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


def _replacements(args: argparse.Namespace, aws: Callable[[str], Any] | None) -> int:
    from gpu_pool.cli import replacements as found
    from gpu_pool.cli.dra_upgrade import driver_upgrade

    pairs: list[tuple[str, str | None, dict[str, Any], dict[str, Any]]] = []
    if args.cdk_out and not (args.new or args.deployed):
        stacks = _assembly_stacks(Path(args.cdk_out))
        if args.stack is not None:
            names = ", ".join(entry[0] for entry in stacks)
            stacks = [entry for entry in stacks if entry[0] == args.stack]
            if not stacks:
                raise CliError(f"--stack: no stack '{args.stack}' in {args.cdk_out} ({names})")
        for stack, region, new, path in stacks:
            pairs.append((stack, region, _deployed_template(stack, region, aws, path), new))
    elif args.new and args.deployed and not (args.cdk_out or args.stack):
        pairs.append((args.new, None, _template_file(args.deployed), _template_file(args.new)))
    else:
        raise CliError(
            "replacements: give --deployed and --new (two template files), or --cdk-out DIR "
            "(and --stack NAME)"
        )
    rolls = [
        (stack, region, roll)
        for stack, region, old, new in pairs
        for roll in found.nodegroup_rolls(old, new)
    ]
    additions = [
        (stack, group)
        for stack, _, old, new in pairs
        for group in found.nodegroup_additions(old, new)
    ]
    if additions:
        print("gpu-pool replacements: node groups this deploy adds:")
        for stack, group in additions:
            print(f"  {stack}: {group}")
    if rolls:
        print(
            "gpu-pool replacements: node groups this deploy rolls (EKS replaces their nodes one "
            "at a time, respecting PodDisruptionBudgets):"
        )
        for stack, _, roll in rolls:
            print(f"  {stack}: {roll}")
    blocks = [(stack, region, roll) for stack, region, roll in rolls if roll.capacity_block]
    for stack, region, roll in blocks:
        # The offline form names templates, not stacks: the command then says STACK.
        command = roll.scale_to_zero(stack if args.cdk_out else "STACK", region)
        print(
            f"{stack}: the Capacity Block node group of {roll.owner}: EKS updates one only at "
            "desired size 0 (EKS user guide, Capacity Blocks for managed node groups). Let its "
            f"jobs finish, scale it to 0, then deploy:\n  {command}"
        )
    updates = [
        (stack, group)
        for stack, _, old, new in pairs
        for group in found.nodegroup_updates(old, new)
    ]
    if updates:
        print(
            "gpu-pool replacements: node groups whose labels, taints or repair this deploy "
            "changes in place (the node group is updated, no node is replaced: docs/day2.md):"
        )
        for stack, group in updates:
            print(f"  {stack}: {group}")
    asks = bool(blocks)
    upgrades = [u for _, _, old, new in pairs if (u := driver_upgrade(old, new))]
    for upgrade in upgrades:
        print("\n".join(upgrade.lines()))
    asks |= bool(upgrades)
    for stack, region, old, new in pairs:
        asks |= _auto_mode(stack, region, old, new, args.yes, aws)
    losses = [
        (stack, loss)
        for stack, _, old, new in pairs
        for loss in [*found.nodegroup_losses(old, new), *found.dependency_changes(old, new)]
    ]
    if losses:
        print("gpu-pool replacements: this deploy replaces or deletes what running work needs:")
        for stack, loss in losses:
            print(f"  {stack}: {loss}")
        print(
            "Nodes of a replaced or deleted node group are drained within minutes, "
            "PodDisruptionBudgets ignored: GPU jobs running on them stop. Drain them yourself "
            "first, or keep the old settings."
        )
        for stack, _, old, new in pairs:
            _print_zone_cause(stack, *found.zone_change(old, new))
    elif not asks:
        print("gpu-pool replacements: no node group is replaced or deleted")
        return 0
    if args.yes:
        return 0
    if not sys.stdin.isatty():
        raise CliError(
            "replacements: not confirmed (no terminal to ask on); re-run with --yes to proceed"
        )
    answer = input("Deploy anyway? [y/N] ").strip().lower()
    return 0 if answer in ("y", "yes") else 1


def _print_zone_cause(stack: str, before: list[str], after: list[str]) -> None:
    """The setting behind VPC, subnet, NAT and cluster changes: the VPC's zones."""
    if not before:
        return
    print(
        f"  {stack}: the cause is the VPC's zones, {', '.join(before)} -> {', '.join(after)} "
        "(cluster.zones, or the region's first three when it is unset)."
    )
    if len(before) >= 2:
        print(f"  To keep the deployed ones, set cluster.zones: [{', '.join(before)}]")


def _auto_mode(
    stack: str,
    region: str | None,
    deployed: dict[str, Any],
    new: dict[str, Any],
    confirmed: bool,
    aws: Callable[[str], Any] | None,
) -> bool:
    """Say what the deploy does to EKS Auto Mode; whether the user must confirm it."""
    from gpu_pool.cli.replacements import auto_mode_switch, cluster_minor, cluster_name
    from gpu_pool.model.auto_mode_addons import minimums_table

    switch = auto_mode_switch(deployed, new)
    if switch is False:
        print(
            f"  {stack}: EKS Auto Mode is turned OFF on the cluster: EKS terminates every "
            "instance Auto Mode runs and deletes the load balancers it runs, users' own too "
            "(EKS user guide, Disable EKS Auto Mode). Set cluster.auto_mode: true to keep it."
        )
        return True
    if switch is True:
        print(
            f"  {stack}: EKS Auto Mode is turned on in place. EKS needs these add-ons, where "
            "installed, at least at (EKS user guide, Enable EKS Auto Mode on an existing "
            "cluster, Required add-on versions):"
        )
        print("\n".join(minimums_table()))
        # With --cdk-out (the stack's region known) and credentials, read the add-ons.
        name = cluster_name(new)
        client = aws or (_aws(region) if region is not None else None)
        if name is None or client is None:
            print(
                f"  {stack}: the add-ons were not read (that needs --cdk-out and AWS "
                f"credentials): {_ADDON_CHECK}"
            )
            return True
        unverified = _check_addons(name, cluster_minor(new), client)
        if unverified:
            print(
                f"  {stack}: {', '.join(unverified)}: no EKS add-on version to compare (self-"
                f"managed, as a new cluster's VPC CNI and kube-proxy are): {_ADDON_CHECK}"
            )
            return True
    return False


# How to read the version of an add-on EKS does not manage: its DaemonSet's image tag.
_ADDON_CHECK = (
    "check their versions against the table before you confirm (kubectl -n kube-system get "
    "daemonset aws-node kube-proxy eks-pod-identity-agent -o "
    "custom-columns=NAME:.metadata.name,IMAGE:.spec.template.spec.containers[0].image)"
)


def _check_addons(cluster: str, minor: str, aws: Callable[[str], Any]) -> list[str]:
    """Each installed EKS add-on of the table against its minimum (DescribeAddon); refuses
    the deploy while one is older. Returns the add-ons whose version it could not judge: not
    EKS add-ons (self-managed, or not installed), or a version of another shape."""
    from botocore.exceptions import BotoCoreError, ClientError

    from gpu_pool.model.auto_mode_addons import (
        ALWAYS_RUNNING,
        AUTO_MODE_ADDON_MINIMUMS,
        KUBE_PROXY,
        addon_minimum,
        below_minimum,
    )

    eks = aws("eks")
    old, unverified = [], []
    for addon in [*AUTO_MODE_ADDON_MINIMUMS, KUBE_PROXY]:
        minimum = addon_minimum(addon, minor)
        if minimum is None:
            continue
        try:
            version = eks.describe_addon(clusterName=cluster, addonName=addon)["addon"][
                "addonVersion"
            ]
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                print(f"  {addon}: not an EKS add-on of {cluster}")
                if addon in ALWAYS_RUNNING:
                    unverified.append(addon)
                continue
            raise CliError(f"replacements: EKS refused DescribeAddon {addon}: {err}") from None
        except BotoCoreError as err:
            raise CliError(f"replacements: cannot read add-on {addon}: {err}") from None
        print(f"  {addon}: {version} on {cluster}")
        judged = below_minimum(version, minimum)
        if judged is None:
            unverified.append(addon)
        elif judged:
            old.append(f"{addon} {version} (needs {minimum})")
    if old:
        raise CliError(
            f"replacements: {cluster} runs {', '.join(old)}: update them first (aws eks "
            "update-addon --cluster-name ... --addon-name ... --addon-version ...), then deploy"
        )
    return unverified


def _template_file(path_text: str) -> dict[str, Any]:
    return _json_object(path_text, REPLACEMENTS, "a JSON CloudFormation template")


def _assembly_stacks(out: Path) -> list[tuple[str, str | None, dict[str, Any], str]]:
    """(stack name, region or None, template, template file) for each stack of a synthesized
    assembly."""
    manifest = _template_file(str(out / "manifest.json"))
    stacks = []
    for artifact_id, artifact in manifest.get("artifacts", {}).items():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        properties = artifact.get("properties", {})
        region = str(artifact.get("environment", "")).rsplit("/", 1)[-1]
        path = str(out / properties["templateFile"])
        stacks.append(
            (
                # The artifact id is the stack name unless the manifest says otherwise.
                properties.get("stackName", artifact_id),
                None if region in ("", "unknown-region") else region,
                _template_file(path),
                path,
            )
        )
    return stacks


def _deployed_template(
    stack: str, region: str | None, aws: Callable[[str], Any] | None, new_path: str
) -> dict[str, Any]:
    """The stack's deployed template; empty when the stack does not exist yet. Without
    credentials or a region, the error names the offline form (--deployed and --new)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    if aws is None:
        import boto3

        aws = boto3.Session(region_name=region or _configured_region()).client
    try:
        body = aws("cloudformation").get_template(StackName=stack, TemplateStage="Original")
    except ClientError as err:
        if "does not exist" in str(err):
            return {}
        raise CliError(
            f"replacements: CloudFormation refused GetTemplate for {stack}: {err}"
        ) from None
    except (NoCredentialsError, NoRegionError) as err:
        missing = "credentials" if isinstance(err, NoCredentialsError) else "region"
        region_option = f" --region {region}" if region else ""
        raise CliError(
            f"replacements: no AWS {missing} to read the deployed {stack} with (CloudFormation "
            "GetTemplate). Offline, compare two templates: where credentials exist, save the "
            f"deployed one (aws cloudformation get-template --stack-name {stack}{region_option} "
            "--query TemplateBody --output json > deployed.json), then run: gpu-pool replacements "
            f"--deployed deployed.json --new {new_path}"
        ) from None
    except BotoCoreError as err:
        raise CliError(f"replacements: cannot read the deployed {stack}: {err}") from None
    template = body["TemplateBody"]
    if isinstance(template, dict):
        return template
    try:
        return dict(json.loads(template))
    except (TypeError, ValueError):
        raise CliError(
            f"replacements: the deployed {stack} template is not JSON (CDK deploys JSON)"
        ) from None
