"""PipelineSettings: the CDK Pipelines pipeline that deploys a fleet of clusters in waves.

Validated where it enters, like AppSettings: field forms here; what needs the fleet's clusters
(every cluster in exactly one wave, each wave selector naming some cluster) in `waves_of`, which
the pipeline construct calls with them (docs/pipeline.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import Field, field_validator

from gpu_pool.settings.base import _Settings
from gpu_pool.settings.errors import ConfigError, matching
from gpu_pool.settings.field_types import ACCOUNT_ID, REGION_NAME, STACK_NAME
from gpu_pool.settings.models import AppSettings

# A wave's entry: a Region (every cluster there) or one cluster's stack_name.
# Patterns spelt apart from equal ones elsewhere: errors.matching keys each message by the
# pattern's text and refuses one pattern with two messages (stack_name's, acknowledge's reason).
WaveSelector = Annotated[
    str,
    matching(
        r"^[a-zA-Z][a-zA-Z0-9-]{0,127}$",
        "a Region name such as us-east-1, or a cluster's stack_name",
    ),
]
ShellCommand = Annotated[str, matching(r"[^\s]", "a shell command (not blank)")]


class PipelineSourceSettings(_Settings):
    """The repository the pipeline builds from, through a CodeConnections (formerly CodeStar
    Connections) connection (aws_cdk.pipelines CodePipelineSource.connection)."""

    connection_arn: str = matching(
        r"^arn:aws[a-z-]*:(codestar-connections|codeconnections):[a-z]{2}(-[a-z]+)+-[0-9]:"
        r"[0-9]{12}:connection/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        "a connection ARN (arn:aws:codeconnections:<region>:<account>:connection/<uuid>, or "
        "the older codestar-connections form)",
    )
    """The connection's ARN (Developer Tools console, Settings > Connections); it must be
    available (its handshake completed) before the pipeline's first run."""
    repository: str = matching(
        r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", "a repository as owner/name, e.g. acme/gpu-fleet"
    )
    """The repository, owner/name (GitHub, GitLab or Bitbucket, as the connection's provider)."""
    branch: str = Field(default="main", min_length=1)
    """The branch whose pushes start the pipeline."""

    @property
    def connection_service(self) -> str:
        """The service prefix of `connection_arn` (codeconnections, or codestar-connections for
        a connection created before July 2024): the prefix of the UseConnection action a role
        needs on it, for "the service prefix needs to match that of the resource" (Developer
        Tools console user guide, "Connections rename - Summary of changes")."""
        return self.connection_arn.split(":")[2]


class PipelineSettings(_Settings):
    """A CDK Pipelines pipeline (CodePipeline) that synthesizes the fleet's app from its
    repository, updates itself, then deploys the clusters wave by wave, each cluster followed
    by `gpu-pool verify` on every pool: a failed verify stops the rollout before the next wave.
    """

    account: str = matching(*ACCOUNT_ID)
    """The account the pipeline runs in (its tooling account); cluster accounts trust it
    through `cdk bootstrap --trust` (docs/pipeline.md)."""
    region: str = matching(*REGION_NAME)
    """The Region the pipeline runs in."""
    stack_name: str = matching(*STACK_NAME, default="GpuPoolPipeline")
    """The pipeline stack's name (deploy it once with `cdk deploy`; it updates itself after)."""
    source: PipelineSourceSettings
    """Where the app's code comes from: connection, repository and branch."""
    directory: str = matching(
        r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$",
        "a directory of the repository, relative (e.g. . or infra/gpu)",
        default=".",
    )
    """The app's directory in the repository: the synth commands run there and its cdk.out
    is the cloud assembly the pipeline deploys."""
    install_commands: list[ShellCommand] = Field(
        default_factory=lambda: ["python -m pip install -r requirements.txt .", "npm ci"],
        min_length=1,
    )
    """The synth step's install commands, at the repository's root, on CodeBuild's standard
    image: the pinned Python requirements with gpu-pool itself (`.`, which the app and the CDK
    CLI plugin import) and the CDK CLI that package-lock.json pins, as this repository pins
    them."""
    synth_commands: list[ShellCommand] = Field(
        default_factory=lambda: ["npx cdk synth"], min_length=1
    )
    """The synth step's commands, in `directory`: the installed CDK CLI synthesizes the app
    (npx finds the CLI of the nearest package.json, up to the root). In a fleet file read by
    this project's app, the default names that fleet file (`npx cdk synth -c config=FILE`),
    or the step would synthesize cdk.json's one cluster instead."""
    waves: list[Annotated[list[WaveSelector], Field(min_length=1)]] = Field(default_factory=list)
    """The deployment order: a list of waves, each a list of Regions (every cluster there) or
    stack names, e.g. [[us-east-1], [eu-west-1, us-west-2]]: us-east-1 first, then the other
    two in parallel. Each cluster in exactly one wave. Empty: one wave per Region, in the order
    the clusters are given."""
    verify: bool = True
    """Run `gpu-pool verify` on each pool of each cluster after it deploys (a smoke pod that
    scales a GPU node up and runs nvidia-smi); a failure fails the wave."""
    verify_namespace: str = matching(
        r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        "a Kubernetes namespace name (lowercase letters, digits and '-', at most 63)",
        default="default",
    )
    """Where the smoke pod runs; the only namespace the verify role may change. Unless every
    cluster has it (default, kube-system, ...), each cluster's stack creates it and deletes it
    with the stack: give one of its own."""
    verify_install_commands: list[ShellCommand] = Field(
        default_factory=lambda: ["python -m pip install -r requirements.txt ."], min_length=1
    )
    """How the verify step installs the `gpu-pool` command (with its cli extra's kubernetes
    and boto3), at the repository's root."""
    self_mutation: bool = True
    """The pipeline updates itself from the synthesized app before deploying (CDK Pipelines'
    default): a change to the fleet or to these settings needs no manual `cdk deploy`."""

    @field_validator("waves")
    @classmethod
    def _each_selector_once(cls, waves: list[list[str]]) -> list[list[str]]:
        seen: set[str] = set()
        for i, wave in enumerate(waves):
            for j, selector in enumerate(wave):
                if selector in seen:
                    raise ValueError(
                        f"[{i}][{j}]: '{selector}' is already in an earlier wave; name each "
                        "Region or stack once"
                    )
                seen.add(selector)
        return waves

    def waves_of(self, clusters: list[AppSettings]) -> list[list[AppSettings]]:
        """The clusters, wave by wave, in the order `waves` gives (or one wave per Region).

        Raises ConfigError, one line per problem: a cluster without account or Region, two
        clusters with one stack name, a selector naming no cluster, a cluster in no wave or in
        two, a private endpoint the verify step cannot reach."""
        problems = [*self._cluster_problems(clusters)]
        if problems:
            raise ConfigError("\n".join(problems))
        waves = self.waves or [[r] for r in dict.fromkeys(c.region or "" for c in clusters)]
        placed: dict[str, int] = {}
        for i, wave in enumerate(waves):
            for j, selector in enumerate(wave):
                named = [c for c in clusters if selector in (c.region, c.stack_name)]
                if not named:
                    problems.append(
                        f"pipeline.waves[{i}][{j}]: '{selector}' is neither the Region nor the "
                        f"stack_name of a cluster (Regions: {_listed(c.region for c in clusters)};"
                        f" stacks: {_listed(c.stack_name for c in clusters)})"
                    )
                for cluster in named:
                    if placed.setdefault(cluster.stack_name, i) != i:
                        problems.append(
                            f"pipeline.waves[{i}][{j}]: cluster '{cluster.stack_name}' is "
                            f"already in wave {placed[cluster.stack_name]}; a cluster deploys "
                            "in one wave"
                        )
        problems += [
            f"pipeline.waves: cluster '{c.stack_name}' ({c.region}) is in no wave: add its "
            "Region or its stack_name to one"
            for c in clusters
            if c.stack_name not in placed
        ]
        if problems:
            raise ConfigError("\n".join(problems))
        return [[c for c in clusters if placed[c.stack_name] == i] for i in range(len(waves))]

    def _cluster_problems(self, clusters: list[AppSettings]) -> list[str]:
        problems: list[str] = []
        if not clusters:
            problems.append("pipeline: no clusters to deploy; give the fleet at least one")
        names = [c.stack_name for c in clusters]
        for name in dict.fromkeys(n for n in names if names.count(n) > 1):
            problems.append(
                f"pipeline: two clusters have stack_name '{name}'; each pipeline stage is "
                "named by it: give each its own"
            )
        for cluster in clusters:
            if cluster.account is None or cluster.region is None:
                problems.append(
                    f"pipeline: cluster '{cluster.stack_name}' needs account and region: "
                    "the pipeline deploys each cluster into its own environment"
                )
            if self.verify and cluster.cluster.endpoint_access == "private":
                problems.append(
                    f"pipeline: cluster '{cluster.stack_name}' has endpoint_access private, "
                    "which the verify step (CodeBuild, outside the cluster's VPC) cannot "
                    "reach: set verify: false, or public_and_private"
                )
        return problems


def _listed(values: Iterable[str | None]) -> str:
    return ", ".join(dict.fromkeys(str(v) for v in values))
