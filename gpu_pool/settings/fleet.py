"""Several clusters in one app (a fleet): `-c config=DIR` or a fleet file, one stack per cluster.

`config` names one of three things (docs/fleet.md):
- a settings file: one cluster, its stack named by `stack_name`, as the app always read it;
- a directory: every `*.yaml`, `*.yml` and `*.json` file in it (sorted by name, not recursive,
  dot-files skipped) is one cluster, each merged over the cdk.json context as a single file is;
- a fleet file: a YAML or JSON file whose top level has `clusters:` (AppSettings has no such key,
  so the form is unambiguous): a list of entries, each a cluster's settings or `{file: path}`
  (relative to the fleet file, with optional settings of the entry merged over the file's),
  over `defaults:`, which is deep-merged under every entry (the entry wins), over the context.

In a fleet each cluster's stack is named `<stack_name>-<cluster.name>-<region>` (`_` in the
cluster name becomes `-`; no Region, no suffix), from the cluster's own name and Region, so the
name does not move when files are added or reordered; a `stack_name` the cluster's own file or
entry sets (not the context or `defaults`) is its stack's name as it is, which brings a stack
deployed from a single file into a fleet unchanged. Every file is read and every cluster
validated before anything fails: the one ConfigError lists each problem, each line led by the
file (or fleet entry) it is about.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpu_pool.model.findings import Finding
from gpu_pool.settings.errors import ConfigError, describe_validation_error
from gpu_pool.settings.loading import (
    FLEET_KEY,
    context_settings,
    empty_file_warning,
    file_settings,
    merge_settings,
    read_config_file,
    validated,
)
from gpu_pool.settings.models import AppSettings
from gpu_pool.settings.pipeline import PipelineSettings

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
# CloudFormation's limit on a stack name's length.
STACK_NAME_LIMIT = 128
FILE_KEY = "file"


class FleetFile(BaseModel):
    """A fleet file's top level: its clusters, what they share, and optionally the pipeline
    that deploys them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    clusters: list[dict[str, Any] | str]
    """Each cluster: its settings, `{file: path}` (and settings merged over the file's), or
    just the path of its settings file (relative to the fleet file)."""
    defaults: dict[str, Any] = Field(default_factory=dict)
    """Settings every cluster shares, deep-merged under each entry (the entry wins)."""
    pipeline: PipelineSettings | None = None
    """A CDK Pipelines pipeline that deploys the clusters in waves (docs/pipeline.md); the app
    is then that pipeline's stack, and `cdk deploy` deploys the pipeline alone."""

    @field_validator("clusters", mode="before")
    @classmethod
    def _a_list(cls, value: object) -> object:
        if isinstance(value, dict):
            raise ValueError(
                "must be a list of clusters, each its settings or {file: path} (got a mapping; "
                "one cluster's own settings are under `cluster:`)"
            )
        if value == []:
            raise ValueError("is empty: list at least one cluster (its settings, or {file: path})")
        return value


@dataclass(frozen=True)
class FleetCluster:
    """One cluster of the fleet: its settings, where they come from and its stack's name."""

    settings: AppSettings
    stack_name: str
    source: str
    """The file or fleet entry messages name (`clusters/eu.yaml`, `fleet.yaml clusters[1]`);
    empty for a single settings file, whose messages stay as they always were."""

    def about(self, message: str) -> str:
        """`message` with every line led by the cluster's source."""
        return about(self.source, message)


@dataclass(frozen=True)
class Fleet:
    """The clusters of the app, in order (files sorted by name, or the fleet file's order), and
    the warnings their files raise."""

    clusters: tuple[FleetCluster, ...]
    warnings: tuple[Finding, ...] = ()
    # The fleet file's `pipeline:`; None: the app deploys the clusters' stacks itself.
    pipeline: PipelineSettings | None = None


def load_fleet(context: object, config: str | None) -> Fleet:
    """The app's clusters from the cdk.json context value and `-c config=` (a settings file, a
    directory of them, a fleet file or nothing). One ConfigError lists every file's problems."""
    fleet, problems = read_fleet(context, config)
    if problems:
        raise ConfigError("\n".join(problems))
    return fleet


def read_fleet(context: object, config: str | None) -> tuple[Fleet, list[str]]:
    """`load_fleet`'s clusters and problems, without raising: the clusters that loaded (the first
    of two that collide), so that an app can check their rules too and report everything at
    once, and one line per problem of the others."""
    try:
        base = context_settings(context)
        if not config:
            settings, warnings = validated(base), list[Finding]()
        elif Path(config).is_dir():
            return _resolve(base, _directory(Path(config)), [])
        elif FLEET_KEY in (data := read_config_file(config)):
            return _resolve(base, *_fleet_file(config, data))
        else:
            settings, warnings = file_settings(base, config, data)
    except ConfigError as err:
        return Fleet(()), [str(err)]
    return Fleet((FleetCluster(settings, settings.stack_name, ""),), tuple(warnings)), []


@dataclass(frozen=True)
class _Entry:
    """A cluster before validation: its settings layers (merged in order) and its source."""

    source: str
    layers: Sequence[dict[str, Any]]
    # The settings the cluster itself states (its file, its entry): a stack_name here is kept.
    own: dict[str, Any]
    warnings: list[Finding]


def _directory(path: Path) -> list[_Entry | str]:
    """An entry per config file, or the message of one that cannot be read."""
    try:
        files = sorted(
            child
            for child in path.iterdir()
            if child.suffix in CONFIG_SUFFIXES
            and not child.name.startswith(".")
            and not child.is_dir()
        )
    except OSError as err:
        raise ConfigError(f"config: cannot read directory '{path}': {err.strerror}") from None
    if not files:
        raise ConfigError(
            f"config: directory '{path}' holds no *.yaml, *.yml or *.json file; put each "
            "cluster's settings in one"
        )
    found: list[_Entry | str] = []
    for file in files:
        try:
            data = read_config_file(str(file))
        except ConfigError as err:
            found.append(str(err))
            continue
        if FLEET_KEY in data:
            found.append(
                f"config: '{file}' is a fleet file (a top-level `{FLEET_KEY}:`); each file of a "
                "directory is one cluster's settings: give the fleet file as -c config=FILE"
            )
            continue
        found.append(_Entry(str(file), [data], data, empty_file_warning(str(file), data)))
    return found


def _fleet_file(
    config: str, data: dict[str, Any]
) -> tuple[list[_Entry | str], list[str], PipelineSettings | None]:
    """The entries of a fleet file (with `defaults` as their first layer) and its pipeline, or
    its problems."""
    try:
        fleet = FleetFile.model_validate(data)
    except ValidationError as err:
        described = describe_validation_error(err, FleetFile)
        lines = [_fleet_key_hint(line) for line in described.splitlines()]
        return [], about(config, "\n".join(lines)).splitlines(), None
    found: list[_Entry | str] = []
    for index, listed in enumerate(fleet.clusters):
        source = f"{config} clusters[{index}]"
        entry = {FILE_KEY: listed} if isinstance(listed, str) else listed
        if FILE_KEY not in entry:
            found.append(_Entry(source, [fleet.defaults, entry], entry, []))
            continue
        file_name, inline = entry[FILE_KEY], {k: v for k, v in entry.items() if k != FILE_KEY}
        if not isinstance(file_name, str) or not file_name:
            found.append(
                f"{source}.{FILE_KEY}: must be the path of a cluster's settings file, relative "
                f"to the fleet file (got {file_name!r})"
            )
            continue
        file = str(Path(config).parent / file_name)
        try:
            settings = read_config_file(file)
        except ConfigError as err:
            found.append(about(source, str(err)))
            continue
        if FLEET_KEY in settings:
            found.append(
                f"{source}: '{file}' is a fleet file (a top-level `{FLEET_KEY}:`); fleets do not "
                "nest: name a cluster's settings file"
            )
            continue
        found.append(
            _Entry(
                f"{source} ({file})",
                [fleet.defaults, settings, inline],
                merge_settings(settings, inline),
                empty_file_warning(file, settings),
            )
        )
    pipeline = fleet.pipeline
    if pipeline is None or "synth_commands" in pipeline.model_fields_set:
        return found, [], pipeline
    if Path(config).is_absolute():
        return (
            found,
            [
                f"{config}: pipeline.synth_commands: not given, so the pipeline's synth step "
                f"would run `cdk synth -c config={config}`, a path of this machine: give -c "
                "config= relative to the app's directory (as the repository has it), or set "
                "pipeline.synth_commands"
            ],
            None,
        )
    return found, [], _synthesizing(pipeline, config)


def _synthesizing(pipeline: PipelineSettings, config: str) -> PipelineSettings:
    """The fleet's pipeline, whose synth step (its commands not given) synthesizes this fleet
    file (`-c config=` as the app was given it, relative to the app's directory, where the step
    runs), not cdk.json's one cluster."""
    command = f"npx cdk synth -c config={shlex.quote(config)}"
    return pipeline.model_copy(update={"synth_commands": [command]})


def _fleet_key_hint(line: str) -> str:
    """A cluster setting at a fleet file's top level says where it belongs."""
    key = line.partition(": unknown setting")[0]
    if line.startswith(f"{key}: unknown setting") and key in AppSettings.model_fields:
        return (
            f"{key}: a cluster setting at the fleet file's top level: put it under `defaults:` "
            "(every cluster) or in a cluster's entry"
        )
    return line


def _resolve(
    base: dict[str, Any],
    entries: list[_Entry | str],
    problems: list[str],
    pipeline: PipelineSettings | None = None,
) -> tuple[Fleet, list[str]]:
    """Every entry validated: the clusters, and every problem of every entry, then between
    them."""
    clusters: list[FleetCluster] = []
    warnings: list[Finding] = []
    for entry in entries:
        if isinstance(entry, str):
            problems.append(entry)
            continue
        merged = base
        for layer in entry.layers:
            merged = merge_settings(merged, layer)
        try:
            settings = validated(merged)
        except ConfigError as err:
            problems.append(about(entry.source, str(err)))
            continue
        warnings += entry.warnings
        own_name = "stack_name" in entry.own
        stack_name = settings.stack_name if own_name else fleet_stack_name(settings)
        if len(stack_name) > STACK_NAME_LIMIT:
            problems.append(
                f"{entry.source}: stack name '{stack_name}' is {len(stack_name)} characters, "
                f"more than CloudFormation's {STACK_NAME_LIMIT}: shorten stack_name or "
                "cluster.name, or set the cluster's own stack_name"
            )
            continue
        # The settings name the stack they deploy as, whoever builds it (the app or a pipeline).
        settings = settings.model_copy(update={"stack_name": stack_name})
        clusters.append(FleetCluster(settings, stack_name, entry.source))
    distinct, collisions = _without_collisions(clusters)
    return Fleet(tuple(distinct), tuple(warnings), pipeline), problems + collisions


def fleet_stack_name(settings: AppSettings) -> str:
    """`<stack_name>-<cluster name>-<region>`: a valid CloudFormation stack name (letters,
    digits and '-'), stable as long as the cluster's name and Region are."""
    parts = [settings.stack_name, settings.cluster.name.replace("_", "-"), settings.region]
    return "-".join(part for part in parts if part)


def _without_collisions(
    clusters: Sequence[FleetCluster],
) -> tuple[list[FleetCluster], list[str]]:
    """The clusters but the second of one cluster (name, account, Region) twice or of two with
    one stack name, and a problem for each such pair."""
    problems, distinct = [], []
    by_identity: dict[tuple[str, str | None, str | None], FleetCluster] = {}
    by_stack_name: dict[str, FleetCluster] = {}
    for cluster in clusters:
        settings = cluster.settings
        identity = (settings.cluster.name, settings.account, settings.region)
        if (first := by_identity.get(identity)) is not None:
            # A name no file, entry or context states is the default: say so, not as if chosen.
            unset = "name" not in settings.cluster.model_fields_set
            problems.append(
                f"cluster '{settings.cluster.name}'"
                f"{' (the default cluster.name: none is set)' if unset else ''} in account "
                f"{settings.account or '(of the deploy environment)'}, Region "
                f"{settings.region or '(of the deploy environment)'} twice: "
                f"{first.source} and {cluster.source}; each cluster once (another "
                "cluster.name, account or region)"
            )
        elif (first := by_stack_name.get(cluster.stack_name)) is not None:
            problems.append(
                f"stack name '{cluster.stack_name}' twice: {first.source} and {cluster.source}; "
                "each cluster's stack needs a name of its own: another cluster.name (the same "
                "name in one Region of two accounts collides), or set `stack_name` in one of them"
            )
        else:
            distinct.append(cluster)
        by_identity.setdefault(identity, cluster)
        by_stack_name.setdefault(cluster.stack_name, cluster)
    return distinct, problems


def about(source: str, message: str) -> str:
    """Every line of `message` led by `source` (none when `source` is empty)."""
    if not source:
        return message
    return "\n".join(f"{source}: {line}" for line in message.splitlines())
