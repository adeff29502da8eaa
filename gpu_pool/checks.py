"""Synth-time guardrails: every known way a GPU pool fails, found from the settings alone.

Each rule yields a Finding naming the setting, what is wrong and what to do. Errors stop the
synth (deploying would not work); warnings become CDK warning annotations (it works, but costs
money or time). README.md lists every rule with its reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from aws_cdk import Annotations
from constructs import Construct

from gpu_pool import catalog
from gpu_pool.catalog import Architecture, CatalogError, GpuInstanceType
from gpu_pool.gpu_software import (
    DEVICE_PLUGIN_CHART_DEFAULTS,
    device_plugin_values,
    is_bottlerocket,
    resolved_gpu_software,
)
from gpu_pool.node_template import autoscaler_tags, node_labels
from gpu_pool.scheduling import pod_fits_node
from gpu_pool.settings import AppSettings, ConfigError, PoolSettings, deep_merge
from gpu_pool.versions import KUBERNETES_RELEASES

# Tags EKS itself puts on a managed node group's ASG besides the two discovery tags we also
# write: eks:cluster-name, eks:nodegroup-name and kubernetes.io/cluster/<name>.
EKS_OWN_ASG_TAGS = 3
MAX_ASG_TAGS = 50
MIN_RECOMMENDED_DISK_GIB = 100
MAX_DISK_GIB = 16384  # gp3 volume limit

_EXACT_VERSION = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+$")
_ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$")
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_QUALIFIED_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?" + _LABEL_NAME + "$"
)
_LABEL_VALUE = re.compile(r"^(" + _LABEL_NAME + ")?$")
_VALID_KEY = "an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.'"
_VALID_VALUE = "up to 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"


@dataclass(frozen=True)
class Finding:
    setting: str
    message: str
    error: bool

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


def _error(setting: str, message: str) -> Finding:
    return Finding(setting, message, True)


def _warning(setting: str, message: str) -> Finding:
    return Finding(setting, message, False)


def report(scope: Construct, findings: Iterable[Finding]) -> None:
    """Raise ConfigError listing every error; attach each warning to `scope`."""
    findings = list(findings)
    errors = [f for f in findings if f.error]
    if errors:
        raise ConfigError("\n".join(str(f) for f in errors))
    for finding in findings:
        Annotations.of(scope).add_warning_v2(f"gpu-pool:{finding.setting}", str(finding))


def resolve_groups(
    pool: PoolSettings, prefix: str = "pool"
) -> tuple[list[list[GpuInstanceType]], list[Finding]]:
    """The pool's instance-type entries resolved through the catalog, with their problems."""
    groups: list[list[GpuInstanceType]] = []
    findings: list[Finding] = []
    for index, entry in enumerate(pool.instance_types):
        names = [entry] if isinstance(entry, str) else list(entry)
        setting = f"{prefix}.instance_types[{index}]"
        if not names:
            findings.append(_error(setting, "empty list; name at least one instance type"))
            continue
        resolved = []
        for name in names:
            try:
                resolved.append(catalog.lookup(name))
            except CatalogError as err:
                findings.append(_error(setting, str(err)))
        if len(resolved) == len(names):
            groups.append(resolved)
    return groups, findings


def nvidia_ami_type(family: str, architecture: Architecture) -> str:
    cpu = "x86_64" if architecture is Architecture.X86_64 else "ARM_64"
    return f"{family}_{cpu}_NVIDIA"


def ami_type_for(pool: PoolSettings, architecture: Architecture) -> str:
    """The node group's AMI type: the explicit setting, else the family's for this CPU."""
    return pool.ami_type or nvidia_ami_type(pool.ami_family, architecture)


def check_pool(pool: PoolSettings, prefix: str = "pool") -> list[Finding]:
    """Every rule about one GPU pool's settings."""
    groups, findings = resolve_groups(pool, prefix)
    if not pool.instance_types:
        findings.append(
            _error(
                f"{prefix}.instance_types",
                "empty; list at least one, e.g. ['g5.xlarge']",
            )
        )
    findings += _check_groups(pool, groups, prefix)
    findings += _check_gpu_software(pool, prefix)
    findings += _check_versions(pool, prefix)
    findings += _check_labels_and_taints(pool, groups, prefix)
    findings += _check_scaling(pool, prefix)
    findings += _check_disk(pool, prefix)
    findings += _check_zones(pool.zones, prefix)
    return findings


def _check_groups(
    pool: PoolSettings, groups: Sequence[Sequence[GpuInstanceType]], prefix: str
) -> Iterator[Finding]:
    for index, group in enumerate(groups):
        setting = f"{prefix}.instance_types[{index}]"
        counts = {t.name: t.gpu_count for t in group}
        if len(set(counts.values())) > 1:
            yield _error(
                setting,
                f"instance types differ in GPU count ({_pairs(counts)}); the autoscaler's node "
                "template has one count per node group: put them in separate entries",
            )
        arches = {t.name: t.architecture.value for t in group}
        if len(set(arches.values())) > 1:
            yield _error(
                setting,
                f"instance types differ in CPU architecture ({_pairs(arches)}); a node group has "
                "one AMI: put them in separate entries",
            )
        if pool.ami_type:
            family = pool.ami_type.split("_", 1)[0]
            for gpu_type in group:
                if ("ARM_64" in pool.ami_type) != (gpu_type.architecture is Architecture.ARM64):
                    yield _error(
                        f"{prefix}.ami_type",
                        f"{pool.ami_type} does not run on {gpu_type.name} "
                        f"({gpu_type.architecture.value}): use "
                        f"{nvidia_ami_type(family, gpu_type.architecture)}, or leave ami_type "
                        "unset to derive it from the instance type",
                    )


def _pairs(mapping: Mapping[str, object]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in mapping.items())


def _check_gpu_software(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    software = resolved_gpu_software(pool)
    bottlerocket = is_bottlerocket(pool)
    setting = f"{prefix}.gpu_software"
    if software == "none" and not bottlerocket:
        yield _error(
            setting,
            "'none' on AL2023: its NVIDIA AMI carries no device plugin, so nodes would advertise "
            "no nvidia.com/gpu and GPU pods stay Pending; use 'device-plugin' or 'gpu-operator'",
        )
    if software == "device-plugin" and bottlerocket:
        yield _error(
            setting,
            "'device-plugin' on Bottlerocket: its NVIDIA AMI ships the device plugin, a second "
            "one would fight it; use 'none' (or 'gpu-operator', which then skips its own plugin)",
        )
    if software == "gpu-operator":
        for part in ("driver", "toolkit"):
            if getattr(pool.gpu_operator, f"{part}_enabled"):
                yield _error(
                    f"{prefix}.gpu_operator.{part}_enabled",
                    f"true, but the EKS NVIDIA AMIs already carry the {part}; a second one "
                    "breaks the node's GPU stack: set it to false",
                )


def _check_versions(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    yield from _exact_versions(f"{prefix}.versions", pool.versions.model_dump())


def _exact_versions(prefix: str, versions: dict[str, str | None]) -> Iterator[Finding]:
    for name, value in versions.items():
        if value is not None and not _EXACT_VERSION.match(value):
            yield _error(
                f"{prefix}.{name}",
                f"'{value}' is not an exact version; pin one such as 1.2.3 (never 'latest' or a "
                "range), or leave it unset for the tested pin in gpu_pool/versions.py",
            )


def _check_labels_and_taints(
    pool: PoolSettings, groups: Sequence[Sequence[GpuInstanceType]], prefix: str
) -> Iterator[Finding]:
    for key, value in pool.labels.items():
        if not _QUALIFIED_KEY.match(key):
            yield _error(f"{prefix}.labels", f"'{key}' is not a label key: use {_VALID_KEY}")
        if not _LABEL_VALUE.match(value):
            yield _error(
                f"{prefix}.labels.{key}", f"'{value}' is not a label value: use {_VALID_VALUE}"
            )
    seen = set()
    for index, taint in enumerate(pool.taints):
        setting = f"{prefix}.taints[{index}]"
        if not _QUALIFIED_KEY.match(taint.key):
            yield _error(setting, f"key '{taint.key}' is not a taint key: use {_VALID_KEY}")
        if ":" in taint.value:
            yield _error(
                setting,
                f"value '{taint.value}' contains ':'; Cluster Autoscaler's taint tag is "
                "value:Effect and would misread it: choose a value without ':'",
            )
        elif not _LABEL_VALUE.match(taint.value):
            yield _error(setting, f"value '{taint.value}' is not a taint value: use {_VALID_VALUE}")
        if not taint.value:
            yield _warning(
                setting,
                f"taint '{taint.key}' has no value; pods tolerating it with operator Equal and a "
                "value (as most examples do) will not match: give it a value, e.g. 'true'",
            )
        if (taint.key, taint.effect) in seen:
            yield _error(setting, f"duplicate taint '{taint.key}' with effect {taint.effect}")
        seen.add((taint.key, taint.effect))
    if not pool.taints:
        yield _warning(
            f"{prefix}.taints",
            "no taint: any pod can land on a GPU node and keep it (and its cost) alive; "
            "add e.g. nvidia.com/gpu=true:NoSchedule",
        )
    if not pool.labels:
        yield _error(
            f"{prefix}.labels",
            "empty: the device plugin's node selection comes from these labels and would "
            "match CPU nodes too (where it crash-loops); add e.g. accelerator: nvidia",
        )
    yield from _check_device_plugin_reaches_nodes(pool, groups, prefix)
    yield from _check_tag_budget(pool, groups, prefix)


def _check_device_plugin_reaches_nodes(
    pool: PoolSettings, groups: Sequence[Sequence[GpuInstanceType]], prefix: str
) -> Iterator[Finding]:
    """Render the device plugin's scheduling terms and test them against each group's nodes."""
    if resolved_gpu_software(pool) != "device-plugin":
        return
    pod_spec = deep_merge(
        DEVICE_PLUGIN_CHART_DEFAULTS, device_plugin_values(pool.labels, pool.taints)
    )
    taints = [t.model_dump() for t in pool.taints]
    for group in groups:
        labels = node_labels(pool.labels, group)
        if not pod_fits_node(pod_spec, labels, taints):
            yield _error(
                f"{prefix}.labels",
                f"the device plugin would not run on {group[0].name} nodes (labels {labels}); "
                "a pool label must not override nvidia.com/gpu.present or "
                "k8s.amazonaws.com/accelerator",
            )


def _check_tag_budget(
    pool: PoolSettings, groups: Sequence[Sequence[GpuInstanceType]], prefix: str
) -> Iterator[Finding]:
    for group in groups[:1]:
        tags = autoscaler_tags("cluster", node_labels(pool.labels, group), pool.taints, 1, 1)
        total = len(tags) + EKS_OWN_ASG_TAGS
        if total > MAX_ASG_TAGS:
            yield _error(
                f"{prefix}.labels",
                f"labels and taints need {len(tags)} ASG tags, plus {EKS_OWN_ASG_TAGS} EKS adds: "
                f"{total}, over Auto Scaling's {MAX_ASG_TAGS} per group; use fewer labels/taints",
            )
        for key, value in tags.items():
            if len(key) > 128 or len(value) > 256:
                yield _error(
                    f"{prefix}.labels",
                    f"ASG tag '{key}' is longer than Auto Scaling allows (key 128, value 256)",
                )


def _check_scaling(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    sizes = {
        "min_size": pool.min_size,
        "desired_size": pool.desired_size,
        "max_size": pool.max_size,
    }
    for name, value in sizes.items():
        if value < 0:
            yield _error(f"{prefix}.{name}", f"{value} is negative; sizes are 0 or more")
    if pool.max_size == 0:
        yield _error(
            f"{prefix}.max_size",
            "0: the pool could never run a GPU node; set 1 or more",
        )
    if pool.min_size > pool.max_size:
        yield _error(f"{prefix}.min_size", f"{pool.min_size} is above max_size {pool.max_size}")
    elif not pool.min_size <= pool.desired_size <= pool.max_size:
        yield _error(
            f"{prefix}.desired_size",
            f"{pool.desired_size} is outside [min_size {pool.min_size}, max_size {pool.max_size}]",
        )
    if pool.min_size > 0:
        yield _warning(
            f"{prefix}.min_size",
            f"{pool.min_size}: that many GPU nodes per node group run (and bill) even when idle; "
            "0 lets the pool scale to zero",
        )


def _check_disk(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    setting = f"{prefix}.disk_size_gib"
    if not 1 <= pool.disk_size_gib <= MAX_DISK_GIB:
        yield _error(setting, f"{pool.disk_size_gib} is outside 1..{MAX_DISK_GIB} GiB")
    elif pool.disk_size_gib < MIN_RECOMMENDED_DISK_GIB:
        yield _warning(
            setting,
            f"{pool.disk_size_gib} GiB: CUDA images are several GiB each and pods get evicted "
            f"under disk pressure; use {MIN_RECOMMENDED_DISK_GIB} or more (default 200)",
        )


def _check_zones(zones: Sequence[str], prefix: str) -> Iterator[Finding]:
    for zone in zones:
        if not _ZONE.match(zone):
            yield _error(
                f"{prefix}.zones",
                f"'{zone}' is not an availability zone name such as us-east-1a",
            )
    if len(set(zones)) != len(zones):
        yield _error(f"{prefix}.zones", "lists a zone twice")


def check_app(settings: AppSettings, today: date | None = None) -> list[Finding]:
    """The rules about the app's settings beyond the pool (GpuNodePool checks the pool)."""
    today = today or date.today()
    findings: list[Finding] = []
    cluster = settings.cluster
    release = KUBERNETES_RELEASES.get(cluster.kubernetes_version)
    if release is None:
        findings.append(
            _error(
                "cluster.kubernetes_version",
                f"'{cluster.kubernetes_version}' is not supported; choose one of "
                f"{', '.join(KUBERNETES_RELEASES)}",
            )
        )
        return findings
    if today > release.eks_creates_until:
        findings.append(
            _warning(
                "cluster.kubernetes_version",
                f"EKS no longer creates {release.minor} clusters (extended support ended "
                f"{release.eks_creates_until}); a new cluster will fail to create: use "
                f"{max(KUBERNETES_RELEASES, key=_minor_key)}",
            )
        )
    layer = cluster.kubectl_layer_version
    if layer is not None and layer != release.minor:
        findings.append(
            _error(
                "cluster.kubectl_layer_version",
                f"'{layer}' does not match the cluster's {release.minor}; kubectl must match the "
                f"API server's minor: remove the setting or set '{release.minor}'",
            )
        )
    findings += _check_autoscaler(settings, release.cluster_autoscaler_image_tag)
    findings += _check_placement(settings)
    system = cluster.system_nodes
    if not 0 <= system.min_size <= system.desired_size <= system.max_size or system.max_size < 1:
        findings.append(
            _error(
                "cluster.system_nodes",
                f"sizes min {system.min_size}, desired {system.desired_size}, max "
                f"{system.max_size} must satisfy 0 <= min <= desired <= max, max >= 1",
            )
        )
    return findings


def _minor_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _check_autoscaler(settings: AppSettings, image_tag: str | None) -> Iterator[Finding]:
    autoscaler = settings.autoscaler
    if not autoscaler.enabled:
        return
    yield from _exact_versions(
        "autoscaler",
        {"chart_version": autoscaler.chart_version, "image_tag": autoscaler.image_tag},
    )
    minor = settings.cluster.kubernetes_version
    if autoscaler.image_tag is None and image_tag is None:
        yield _error(
            "cluster.kubernetes_version",
            f"no Cluster Autoscaler image is pinned for {minor} (its minor must equal the "
            "cluster's); choose another version, set autoscaler.image_tag, or set "
            "autoscaler.enabled: false",
        )
    tag = autoscaler.image_tag
    if (
        tag is not None
        and _EXACT_VERSION.match(tag)
        and not tag.lstrip("v").startswith(f"{minor}.")
    ):
        yield _error(
            "autoscaler.image_tag",
            f"'{tag}' does not match the cluster's minor {minor}; Cluster Autoscaler supports "
            f"only its own minor: use a v{minor}.x tag",
        )


def _check_placement(settings: AppSettings) -> Iterator[Finding]:
    zones = settings.pool.zones
    existing = settings.cluster.existing
    if existing is not None:
        for zone in existing.subnets_by_zone:
            if not _ZONE.match(zone):
                yield _error(
                    "cluster.existing.subnets_by_zone",
                    f"'{zone}' is not an availability zone name such as us-east-1a",
                )
        missing = [z for z in zones if z not in existing.subnets_by_zone]
        if missing:
            yield _error(
                "pool.zones",
                f"{', '.join(missing)} not in cluster.existing.subnets_by_zone "
                f"({', '.join(existing.subnets_by_zone)}): add its subnets or drop the zone",
            )
        return
    if zones and settings.region is None:
        yield _error(
            "pool.zones",
            "needs region: zone names only mean something in a known region",
        )
    for zone in zones:
        if settings.region and _ZONE.match(zone) and zone[:-1] != settings.region:
            yield _error("pool.zones", f"'{zone}' is not in region {settings.region}")


def check_cli_pin(package_json: Path) -> list[Finding]:
    """The CDK CLI must be pinned to an exact version in package.json."""
    if not package_json.is_file():
        return []
    pins = json.loads(package_json.read_text(encoding="utf-8")).get("devDependencies", {})
    version = pins.get("aws-cdk")
    if version is None or not _EXACT_VERSION.match(version):
        return [
            _error(
                "package.json devDependencies.aws-cdk",
                f'{version!r} is not an exact version; pin the CDK CLI, e.g. "2.1148.1"',
            )
        ]
    return []
