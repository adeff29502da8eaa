"""`gpu-pool doctor --cdk-out DIR`: the doctor of every cluster of a cloud assembly, one
summary.

The clusters are those the assembly's pool records name (one cluster may span stacks: the
cluster in one, its pools in another), each with the account and Region of its stacks'
environment. Each is checked by the one-cluster doctor (verdicts.py) in its own Region, with the
AWS credentials of the profile chosen for its account, through the kubeconfig context
`aws eks update-kubeconfig` writes for it (named by the cluster's ARN). A cluster that cannot be
checked (no context, no credentials, credentials of another account, the API unreachable or
refusing us) gets the verdict `unreachable` and the command that fixes it; the others are
`ok`, `warnings` or `errors`, by their worst check.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.cli.commands.doctor.verdicts import doctor_verdicts
from gpu_pool.cli.errors import CliError
from gpu_pool.cli.inspect.cluster import Verdict
from gpu_pool.cli.sources import StackPools, short_names
from gpu_pool.plan.record import PoolRecord

OK, WARNINGS, ERRORS, UNREACHABLE = "ok", "warnings", "errors", "unreachable"
# The verdicts that fail the command (exit 1).
FAILING = frozenset({ERRORS, UNREACHABLE})

# (core, apps, custom) Kubernetes clients of a cluster through a kubeconfig context; raises
# CliError when the API cannot be reached or refuses us (kube.kubernetes_clients).
Connect = Callable[["FleetCluster", str], tuple[Any, Any, Any]]
# A boto3 client factory for (profile or None, Region or None); None without credentials.
AwsFor = Callable[[str | None, str | None], Callable[[str], Any] | None]


@dataclass(frozen=True)
class FleetCluster:
    """One cluster of the assembly: its name (None where EKS generates it), Region and account
    (None where its stacks are environment-agnostic), the stacks that hold its pools, and the
    pools."""

    name: str | None
    region: str | None
    account: str | None
    stacks: tuple[str, ...]
    records: tuple[PoolRecord, ...]

    @property
    def arn(self) -> str | None:
        """The cluster's ARN: the context name `aws eks update-kubeconfig` gives it."""
        if self.name is None or self.region is None or self.account is None:
            return None
        return f"arn:{_partition(self.region)}:eks:{self.region}:{self.account}:cluster/{self.name}"

    @property
    def label(self) -> str:
        return self.name or f"(generated, stack {self.stacks[0]})"


def _partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def fleet_clusters(stacks: Sequence[StackPools], chosen: Sequence[str] = ()) -> list[FleetCluster]:
    """The clusters whose pools the stacks (those named in `chosen`, else all) record, in the
    order first met. A cluster's Region is its records' (the stack's where they do not say)."""
    names = [stack.name for stack in stacks]
    paths = short_names(names)
    chosen = [paths.get(name, name) if name not in names else name for name in chosen]
    unknown = [name for name in chosen if name not in names]
    if unknown:
        raise CliError(
            f"--stack: no stack {', '.join(map(repr, unknown))} in the assembly (stacks: "
            f"{', '.join(names) or 'none'})"
        )
    # (name, Region, account, the stack where EKS generates the name: each its own cluster)
    Key = tuple[str | None, str | None, str | None, str | None]
    grouped: dict[Key, list[tuple[str, PoolRecord]]] = {}
    for stack in stacks:
        if chosen and stack.name not in chosen:
            continue
        for record in stack.records:
            name = record.cluster_name or None
            key = (name, record.region or stack.region, stack.account, name or stack.name)
            grouped.setdefault(key, []).append((stack.name, record))
    clusters = []
    for (name, region, account, _), found in grouped.items():
        clusters.append(
            FleetCluster(
                name,
                region,
                account,
                tuple(dict.fromkeys(stack for stack, _ in found)),
                tuple(record for _, record in found),
            )
        )
    return clusters


@dataclass(frozen=True)
class ClusterReport:
    """One cluster's verdict, the first fix, and every check (none if unreachable)."""

    cluster: FleetCluster
    verdict: str
    first_fix: str
    checks: tuple[Verdict, ...] = ()
    context: str | None = None


def summarize(cluster: FleetCluster, checks: Sequence[Verdict], context: str) -> ClusterReport:
    """The worst check decides: a `fail` makes `errors`, else a `warn` `warnings`; the first
    fix is that of the first check of the worst kind."""
    for status, verdict in (("fail", ERRORS), ("warn", WARNINGS)):
        worst = [check for check in checks if check.status == status]
        if worst:
            first = worst[0]
            fix = first.fix or f"{first.subject}: {first.detail}"
            return ClusterReport(cluster, verdict, fix, tuple(checks), context)
    return ClusterReport(cluster, OK, "", tuple(checks), context)


def doctor_fleet(
    clusters: Sequence[FleetCluster],
    *,
    contexts: Collection[str],
    current_context: str | None,
    connect: Connect,
    aws_for: AwsFor,
    profiles: Mapping[str, str],
    profile: str | None,
    kubeconfig: str | None = None,
) -> list[ClusterReport]:
    """Each cluster's report. `contexts`: the kubeconfig's context names; `current_context`
    is used for the one cluster of an assembly that has one and no ARN context (as the
    one-cluster doctor always did). `profiles`: account -> AWS profile, over `profile`."""
    reports = []
    for cluster in clusters:
        chosen = profiles.get(cluster.account or "", profile)
        fallback = current_context if len(clusters) == 1 else None
        reports.append(
            _doctor_one(cluster, contexts, fallback, connect, aws_for, chosen, kubeconfig)
        )
    return reports


def _doctor_one(
    cluster: FleetCluster,
    contexts: Collection[str],
    fallback: str | None,
    connect: Connect,
    aws_for: AwsFor,
    profile: str | None,
    kubeconfig: str | None,
) -> ClusterReport:
    import urllib3
    from botocore.exceptions import BotoCoreError, ClientError
    from kubernetes.client import ApiException

    def unreachable(detail: str, fix: str) -> ClusterReport:
        return ClusterReport(cluster, UNREACHABLE, fix, (Verdict("fail", "cluster", detail, fix),))

    if cluster.name is None:
        return unreachable(
            "its name is generated by EKS at deploy, so the assembly does not hold it",
            f"gpu-pool doctor --stack {cluster.stacks[0]} (reads the deployed stack's records)",
        )
    update = _update_kubeconfig(cluster, profile, kubeconfig)
    candidates = _contexts_of(cluster, contexts)
    if len(candidates) > 1:
        return unreachable(
            f"kubeconfig contexts {', '.join(candidates)} all name a cluster {cluster.name}; "
            "the stacks do not say which account",
            "give the stack its account (the settings' `account`, or the stack's env)",
        )
    context = candidates[0] if candidates else fallback
    if context is None:
        wanted = cluster.arn or (
            f"named by the ARN of cluster {cluster.name} "
            f"(arn:{_partition(cluster.region or '')}:eks:{cluster.region or 'REGION'}:ACCOUNT:"
            f"cluster/{cluster.name})"
        )
        return unreachable(f"no kubeconfig context {wanted}", update)
    aws = aws_for(profile, cluster.region)
    if aws is None and profile is not None:
        return unreachable(
            f"no AWS credentials or Region from profile {profile}",
            f"aws sso login --profile {profile} (or aws configure --profile {profile})",
        )
    try:
        if aws is not None and cluster.account is not None:
            account = str(aws("sts").get_caller_identity()["Account"])
            if account != cluster.account:
                return unreachable(
                    f"the AWS credentials{_of(profile)} are for account {account}, the "
                    f"cluster's stacks for {cluster.account}",
                    f"--account-profile {cluster.account}=PROFILE (a profile of that account)",
                )
        core, apps, custom = connect(cluster, context)
        checks = doctor_verdicts(core, apps, cluster.records, cluster.name, aws, custom=custom)
    except CliError as err:
        return unreachable(str(err), f"check the context's credentials and endpoint, or: {update}")
    except ApiException as err:
        return unreachable(f"the API server answered {err.status} {err.reason}", update)
    except (urllib3.exceptions.HTTPError, OSError) as err:
        return unreachable(f"the API server stopped answering ({type(err).__name__})", update)
    except (ClientError, BotoCoreError) as err:
        return unreachable(f"AWS refused a call{_of(profile)}: {err}", _login(profile))
    return summarize(cluster, checks, context)


def _contexts_of(cluster: FleetCluster, contexts: Collection[str]) -> list[str]:
    """The contexts `aws eks update-kubeconfig` writes for the cluster (named by its ARN);
    where its stacks do not say the account or Region, those of a cluster of its name."""
    if cluster.arn is not None:
        return [cluster.arn] if cluster.arn in contexts else []
    region = f":eks:{cluster.region}:" if cluster.region else ":eks:"
    return sorted(
        c
        for c in contexts
        if c.startswith("arn:aws") and region in c and c.endswith(f":cluster/{cluster.name}")
    )


def _of(profile: str | None) -> str:
    return f" of profile {profile}" if profile else ""


def _login(profile: str | None) -> str:
    option = f" --profile {profile}" if profile else ""
    return f"aws sts get-caller-identity{option} must name the cluster's account"


def _update_kubeconfig(cluster: FleetCluster, profile: str | None, kubeconfig: str | None) -> str:
    """The command that writes the cluster's context (named by its ARN)."""
    region = cluster.region or "REGION"
    command = f"aws eks update-kubeconfig --name {cluster.name} --region {region}"
    if profile:
        command += f" --profile {profile}"
    if kubeconfig:
        command += f" --kubeconfig {kubeconfig}"
    return command


def fleet_table(reports: Sequence[ClusterReport]) -> str:
    """One row per cluster: cluster, Region, account, pools, verdict, first fix."""
    header = ("cluster", "region", "account", "pools", "verdict", "first fix")
    rows = [header] + [
        (
            r.cluster.label,
            r.cluster.region or "-",
            r.cluster.account or "-",
            ",".join(p.name for p in r.cluster.records),
            r.verdict,
            r.first_fix or "-",
        )
        for r in reports
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )


def fleet_json(reports: Sequence[ClusterReport]) -> dict[str, Any]:
    return {
        "clusters": [
            {
                "cluster": r.cluster.name,
                "region": r.cluster.region,
                "account": r.cluster.account,
                "stacks": list(r.cluster.stacks),
                "pools": [p.name for p in r.cluster.records],
                "context": r.context,
                "verdict": r.verdict,
                "first_fix": r.first_fix or None,
                "checks": [
                    {"status": c.status, "subject": c.subject, "detail": c.detail, "fix": c.fix}
                    for c in r.checks
                ],
            }
            for r in reports
        ],
        "failed": any(r.verdict in FAILING for r in reports),
    }
