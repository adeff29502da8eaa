"""The Kubernetes clients of the commands that read a running cluster (verify, doctor): the
kubeconfig loaded as kubectl would, and the API server proven to answer, or one line saying
what to do."""

from __future__ import annotations

import argparse
import logging
import os
import re
from typing import Any

from gpu_pool.cli.credentials import configured_region
from gpu_pool.cli.errors import CliError


def add_cluster_options(command: argparse.ArgumentParser) -> None:
    """--kubeconfig, --context and --request-timeout."""
    command.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config")
    command.add_argument("--context", help="kubeconfig context (default: current)")
    command.add_argument("--request-timeout", type=float, default=5.0, metavar="SECONDS")


def kubernetes_clients(
    args: argparse.Namespace, cluster: tuple[str, str | None]
) -> tuple[Any, Any, Any]:
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


# The context name `aws eks update-kubeconfig` writes: the cluster's ARN.
_CLUSTER_ARN = re.compile(
    r"^arn:aws[a-z-]*:eks:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):cluster/(?P<name>.+)$"
)


def located(
    args: argparse.Namespace, cluster: tuple[str, str | None], account: str | None = None
) -> tuple[str, str | None]:
    """The cluster (name, Region) as the kubeconfig finds it. Without --context, the one
    context `aws eks update-kubeconfig` named by the ARN of a cluster of that name (in its
    Region and `account`, where known) is chosen over the current one (args.context is set to
    it), so settings that name only the cluster reach it; its Region, where the pools do not
    say it, is that ARN's. A context that is the ARN of that cluster name in another account is
    refused: clusters of one name in several accounts (prod, staging) are common, and verify
    would run its GPU pod in the wrong one."""
    name, region = cluster
    current = None
    if args.context is None:
        contexts, current = kube_contexts(args)
        named = [
            c
            for c in sorted(contexts)
            if (m := _CLUSTER_ARN.match(c))
            and m["name"] == name
            and region in (None, m["region"])
            and account in (None, m["account"])
        ]
        if len(named) == 1:
            args.context = named[0]
        elif len(named) > 1 and current not in named:
            # One name in several Regions (or accounts): which one the pools are on is not
            # known here, and the current context is none of them.
            raise CliError(
                f"the kubeconfig has a context for cluster {name} in each of "
                f"{', '.join(_where(c) for c in named)}: give --context of the one the pools "
                "are on (or the settings' region)"
            )
    chosen = _CLUSTER_ARN.match(args.context or current or "")
    if chosen and chosen["name"] != name:
        given = "--context" if args.context else "the kubeconfig's current context"
        raise CliError(
            f"{given} {chosen.group(0)} is cluster {chosen['name']}, but the pools are on "
            f"cluster {name}: give --context of {name}'s, or write it with `aws eks "
            f"update-kubeconfig --name {name}" + (f" --region {region}" if region else "") + "`"
        )
    if chosen and chosen["name"] == name and account not in (None, chosen["account"]):
        raise CliError(
            f"the kubeconfig context {chosen.group(0)} is cluster {name} of account "
            f"{chosen['account']}, but the pools are account {account}'s: give --context of "
            f"account {account}'s, or write it with `aws eks update-kubeconfig --name {name}"
            + (f" --region {region}" if region else "")
            + f"` using credentials of account {account}"
        )
    if region is None and chosen and chosen["name"] == name:
        region = chosen["region"]
    return name, region


def _where(context: str) -> str:
    """An EKS context's account and Region, as a message names them."""
    found = _CLUSTER_ARN.match(context)
    return f"{found['region']} (account {found['account']})" if found else context


def kube_contexts(args: argparse.Namespace) -> tuple[set[str], str | None]:
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
