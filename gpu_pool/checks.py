"""Synth-time guardrails: every known way a GPU pool fails, found from the settings alone.

Each rule yields a Finding naming the setting, what is wrong and what to do. Errors stop the
synth (deploying would not work); warnings become CDK warning annotations (it works, but costs
money or time). README.md lists every rule with its reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from aws_cdk import Annotations
from constructs import Construct

from gpu_pool.catalog import Architecture, GpuInstanceType
from gpu_pool.findings import Finding
from gpu_pool.findings import error as _error
from gpu_pool.findings import warning as _warning
from gpu_pool.gpu_software import is_bottlerocket
from gpu_pool.karpenter.checks import check_karpenter_pool, check_karpenter_version
from gpu_pool.node_template import (
    ACCELERATOR_LABEL,
    GPU_PRESENT_LABEL,
    OPERANDS_LABEL,
    POOL_LABEL,
    RESERVED_LABELS,
)
from gpu_pool.plan import PoolPlan, nvidia_ami_type
from gpu_pool.scheduling import pod_fits_node
from gpu_pool.settings import (
    AppSettings,
    AutoscalerSettings,
    ClusterSettings,
    ConfigError,
    PoolSettings,
)
from gpu_pool.versions import (
    DEFAULT_KUBERNETES_VERSION,
    EXACT_VERSION,
    KUBERNETES_RELEASES,
    autoscaler_image_tag,
)

# Tags EKS itself puts on a managed node group's ASG besides the two discovery tags we also
# write: eks:cluster-name, eks:nodegroup-name and kubernetes.io/cluster/<name>.
EKS_OWN_ASG_TAGS = 3
MAX_ASG_TAGS = 50
MIN_RECOMMENDED_DISK_GIB = 100
MAX_DISK_GIB = 16384  # gp3 volume limit

_ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$")
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_QUALIFIED_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?" + _LABEL_NAME + "$"
)
_LABEL_VALUE = re.compile(r"^(" + _LABEL_NAME + ")?$")
_VALID_KEY = "an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.'"
_VALID_VALUE = "up to 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"


def report(scope: Construct, findings: Iterable[Finding]) -> None:
    """Raise ConfigError listing every error; attach each warning to `scope`."""
    findings = list(findings)
    errors = [f for f in findings if f.error]
    if errors:
        raise ConfigError("\n".join(str(f) for f in errors))
    for finding in findings:
        Annotations.of(scope).add_warning_v2(f"gpu-pool:{finding.setting}", str(finding))


def check_pool(plan: PoolPlan) -> list[Finding]:
    """Every rule about one GPU pool on its own."""
    pool, prefix = plan.settings, plan.setting
    findings = list(plan.unresolved)
    if not pool.instance_types:
        findings.append(
            _error(
                f"{prefix}.instance_types",
                "empty; list at least one, e.g. ['g5.xlarge']",
            )
        )
    findings += _check_entries(plan)
    findings += _check_gpu_software(plan)
    findings += _check_versions(pool, prefix)
    findings += _check_labels_and_taints(plan)
    if plan.karpenter is not None:
        findings += check_karpenter_pool(plan.karpenter)
    else:
        findings += _check_scaling(pool, prefix)
    findings += _check_disk(pool, prefix)
    findings += _check_zones(pool.zones, prefix)
    return findings


def _check_entries(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix = plan.settings, plan.setting
    if pool.ami_type and not pool.ami_type.startswith(pool.ami_family):
        family = pool.ami_type.split("_", 1)[0]
        yield _error(
            f"{prefix}.ami_type",
            f"'{pool.ami_type}' is a {family} AMI but ami_family is {pool.ami_family}: drop "
            f"ami_type (it is derived from ami_family) or set ami_family: {family}",
        )
    first_entry: dict[str, int] = {}
    for index, group in enumerate(plan.entries):
        setting = f"{prefix}.instance_types[{index}]"
        for gpu_type in group:
            if gpu_type.name in first_entry:
                yield _error(
                    setting,
                    f"'{gpu_type.name}' is listed again (first in instance_types"
                    f"[{first_entry[gpu_type.name]}]); a type belongs to one node group: "
                    "remove one",
                )
            first_entry.setdefault(gpu_type.name, index)
        if plan.karpenter is None:
            yield from _check_node_group_entry(pool, prefix, setting, group)


def _check_node_group_entry(
    pool: PoolSettings, prefix: str, setting: str, group: Sequence[GpuInstanceType]
) -> Iterator[Finding]:
    """One node group's types: one GPU count (its node template has one), one architecture
    (one AMI), and an AMI type that runs on them."""
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


def _check_gpu_software(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix, software = plan.settings, plan.setting, plan.gpu_software
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
    yield from exact_versions(f"{prefix}.versions", pool.versions.model_dump())


def exact_versions(prefix: str, versions: dict[str, str | None]) -> Iterator[Finding]:
    for name, value in versions.items():
        if value is not None and not EXACT_VERSION.match(value):
            yield _error(
                f"{prefix}.{name}",
                f"'{value}' is not an exact version; pin one such as 1.2.3 (never 'latest' or a "
                "range), or leave it unset for the tested pin in gpu_pool/versions.py",
            )


_RESERVED_WHY = {
    POOL_LABEL: "it names the pool; its device plugin selects nodes by it",
    GPU_PRESENT_LABEL: "the device plugin's affinity needs it on every GPU node",
    ACCELERATOR_LABEL: "Cluster Autoscaler reads the GPU model from it",
    OPERANDS_LABEL: "it keeps the GPU Operator off pools that do not use it",
}


def _check_labels_and_taints(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix = plan.settings, plan.setting
    for key, value in pool.labels.items():
        if key in RESERVED_LABELS:
            yield _error(
                f"{prefix}.labels",
                f"'{key}' is set by gpu-pool itself ({_RESERVED_WHY[key]}): remove it",
            )
        elif not _QUALIFIED_KEY.match(key):
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
    yield from _check_tag_budget(plan)


def _check_tag_budget(plan: PoolPlan) -> Iterator[Finding]:
    for group in plan.node_groups[:1]:
        tags = group.autoscaler_tags("cluster")
        total = len(tags) + EKS_OWN_ASG_TAGS
        if total > MAX_ASG_TAGS:
            yield _error(
                f"{plan.setting}.labels",
                f"labels and taints need {len(tags)} ASG tags, plus {EKS_OWN_ASG_TAGS} EKS adds: "
                f"{total}, over Auto Scaling's {MAX_ASG_TAGS} per group; use fewer labels/taints",
            )
        for key, value in tags.items():
            if len(key) > 128 or len(value) > 256:
                yield _error(
                    f"{plan.setting}.labels",
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


def check_pool_among(plan: PoolPlan, others: Sequence[PoolPlan]) -> list[Finding]:
    """The rules between a pool and the pools already on its cluster (`others`)."""
    findings: list[Finding] = []
    for other in others:
        if other.name == plan.name:
            findings.append(
                _error(
                    f"{plan.setting}.name",
                    f"another pool on this cluster is already named '{plan.name}'; the name "
                    "labels the pool's nodes and names its device plugin release, so it must be "
                    "unique per cluster: rename one",
                )
            )
        if plan.gpu_software == other.gpu_software == "gpu-operator":
            findings.append(
                _error(
                    f"{plan.setting}.gpu_software",
                    f"'gpu-operator', but pool '{other.name}' already installs the GPU "
                    "Operator, which is cluster-wide and installed once: use 'device-plugin' "
                    f"for pool '{plan.name}'",
                )
            )
        findings += _same_labels(plan, other)
    findings += check_one_device_plugin_per_node([*others, plan], plan)
    return findings


def check_one_device_plugin_per_node(plans: Sequence[PoolPlan], new: PoolPlan) -> Iterator[Finding]:
    """Every GPU node runs exactly one device plugin: its AMI's (Bottlerocket) or its pool's.

    The scheduling model is applied to each plugin's rendered pod terms: the plugin of `new`
    must reach each of its node groups, and no pool's plugin may reach another pool's nodes
    (checked both ways between `new` and the rest). A pool whose GPU software does not fit its
    AMI, and a second GPU Operator, are other rules' findings, not this one's.
    """
    new_plugin = _plugin_pod(new)
    for plan in plans:
        for shape in plan.node_shapes:
            nodes = f"{shape.description} of pool '{plan.name}'"
            taints = plan.node_taints()
            if plan is new:
                if new_plugin is not None and not pod_fits_node(new_plugin, shape.labels, taints):
                    yield _error(
                        shape.setting,
                        f"the device plugin would not run on {nodes} (labels "
                        f"{dict(shape.labels)}); they would advertise no nvidia.com/gpu and GPU "
                        "pods would stay Pending",
                    )
                others = [p for p in plans if p is not new]
            else:
                others = [new]
            for other in others:
                if plan.gpu_software == other.gpu_software == "gpu-operator":
                    continue
                plugin = _plugin_pod(other)
                if plugin is not None and pod_fits_node(plugin, shape.labels, taints):
                    yield _error(
                        new.setting,
                        f"{nodes} would also run the device plugin of pool '{other.name}'; two "
                        "plugins on one node fight over its GPUs: pool names must be unique per "
                        "cluster",
                    )


def _plugin_pod(plan: PoolPlan) -> dict[str, Any] | None:
    return plan.chart.device_plugin_pod if plan.chart is not None else None


def _same_labels(plan: PoolPlan, other: PoolPlan) -> Iterator[Finding]:
    """Pools a workload's labels cannot tell apart."""
    if plan.settings.labels != other.settings.labels:
        return
    arches = _architectures(plan)
    other_arches = _architectures(other)
    if arches != other_arches:
        yield _warning(
            f"{plan.setting}.labels",
            f"pool '{plan.name}' has the same labels as pool '{other.name}' but runs "
            f"{'/'.join(arches)} nodes where it runs {'/'.join(other_arches)}; a pod without a "
            "kubernetes.io/arch selector may land on either: give the pools distinct labels, "
            "or select kubernetes.io/arch in the pod",
        )
    elif set(plan.taints) == set(other.taints):
        yield _warning(
            f"{plan.setting}.labels",
            f"pool '{plan.name}' has the same labels and taints as pool '{other.name}'; a pod "
            f"that selects these labels may land on either: select {POOL_LABEL}: {plan.name}, "
            "or give the pools distinct labels",
        )


def _architectures(plan: PoolPlan) -> list[str]:
    return sorted({shape.architecture.value for shape in plan.node_shapes})


def check_app(settings: AppSettings, today: date | None = None) -> list[Finding]:
    """The rules about the app's settings beyond each pool (GpuNodePool checks the pools)."""
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
    if today > release.eks_creates_until and cluster.existing is None:
        findings.append(
            _error(
                "cluster.kubernetes_version",
                f"EKS no longer creates {release.minor} clusters (extended support ended "
                f"{release.eks_creates_until}), so the cluster would fail to create: use "
                f"{DEFAULT_KUBERNETES_VERSION}",
            )
        )
    elif today > release.eks_creates_until:
        findings.append(
            _warning(
                "cluster.kubernetes_version",
                f"{release.minor} left EKS extended support on {release.eks_creates_until}; EKS "
                "upgrades such clusters itself: set the cluster's current minor here",
            )
        )
    findings += _check_endpoint(cluster)
    layer = cluster.kubectl_layer_version
    if layer is not None and layer != release.minor:
        findings.append(
            _error(
                "cluster.kubectl_layer_version",
                f"'{layer}' does not match the cluster's {release.minor}; kubectl must match the "
                f"API server's minor: remove the setting or set '{release.minor}'",
            )
        )
    if uses_autoscaler(settings):
        # Errors only: ClusterAutoscaler reports its findings itself, warnings included.
        findings += [f for f in check_autoscaler(settings.autoscaler, release.minor) if f.error]
    if uses_karpenter(settings):
        findings += _check_karpenter(settings, release.minor)
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


def uses_autoscaler(settings: AppSettings) -> bool:
    """Whether the app installs Cluster Autoscaler: enabled, and some pool uses it."""
    return settings.autoscaler.enabled and any(
        pool.provisioner == "cluster-autoscaler" for _, pool in settings.pool_settings()
    )


def uses_karpenter(settings: AppSettings) -> bool:
    """Whether the app installs Karpenter: some pool uses it."""
    return any(pool.provisioner == "karpenter" for _, pool in settings.pool_settings())


def _check_karpenter(settings: AppSettings, minor: str) -> list[Finding]:
    findings = list(
        exact_versions("karpenter", {"chart_version": settings.karpenter.chart_version})
    )
    findings += check_karpenter_version(settings.karpenter.chart_version, minor)
    existing = settings.cluster.existing
    if existing is not None and existing.cluster_security_group_id is None:
        findings.append(
            _error(
                "cluster.existing.cluster_security_group_id",
                "required with a karpenter pool: Karpenter puts its nodes in the cluster "
                "security group; copy it from `aws eks describe-cluster` "
                "(resourcesVpcConfig.clusterSecurityGroupId)",
            )
        )
    return findings


def check_autoscaler(settings: AutoscalerSettings, minor: str | None) -> list[Finding]:
    """Cluster Autoscaler's pins: exact versions, and an image whose minor is the cluster's.

    `minor` is the cluster's Kubernetes minor, None when it is not known (an imported cluster).
    """
    if not settings.enabled:
        return []
    findings = list(
        exact_versions(
            "autoscaler",
            {"chart_version": settings.chart_version, "image_tag": settings.image_tag},
        )
    )
    tag = settings.image_tag
    if tag is None:
        if minor is None:
            findings.append(
                _error(
                    "cluster.kubernetes_version",
                    "unknown for an imported cluster, so no Cluster Autoscaler image can be "
                    "chosen (its minor must equal the cluster's): pass kubernetes_version or set "
                    "autoscaler.image_tag",
                )
            )
        elif autoscaler_image_tag(minor) is None:
            findings.append(
                _error(
                    "cluster.kubernetes_version",
                    f"no Cluster Autoscaler image is pinned for {minor} (its minor must equal "
                    "the cluster's); choose another version, set autoscaler.image_tag, or set "
                    "autoscaler.enabled: false",
                )
            )
    elif (
        minor is not None
        and EXACT_VERSION.match(tag)
        and not tag.lstrip("v").startswith(f"{minor}.")
    ):
        findings.append(
            _error(
                "autoscaler.image_tag",
                f"'{tag}' does not match the cluster's minor {minor}; Cluster Autoscaler "
                f"supports only its own minor: use a v{minor}.x tag",
            )
        )
    return findings


def _check_endpoint(cluster: ClusterSettings) -> Iterator[Finding]:
    narrowed = cluster.public_access_cidrs != ["0.0.0.0/0"]
    if cluster.existing is None and narrowed and cluster.endpoint_access == "private":
        yield _error(
            "cluster.public_access_cidrs",
            "set, but endpoint_access is private (there is no public endpoint): remove it",
        )
    if cluster.existing is None and narrowed and cluster.endpoint_access == "public":
        yield _error(
            "cluster.public_access_cidrs",
            "with endpoint_access public the nodes reach the API over the internet, so it "
            "cannot be narrowed: use endpoint_access public_and_private to narrow it",
        )


def check_node_selector(
    selector: Mapping[str, str], plans: Sequence[PoolPlan], setting: str = "autoscaler"
) -> list[Finding]:
    """A controller's nodeSelector (`<setting>.node_selector`: the autoscaler's or
    Karpenter's): valid labels, and never a GPU pool's nodes."""
    findings = []
    for key, value in selector.items():
        if not _QUALIFIED_KEY.match(key):
            findings.append(
                _error(f"{setting}.node_selector", f"'{key}' is not a label key: use {_VALID_KEY}")
            )
        if not _LABEL_VALUE.match(value):
            findings.append(
                _error(
                    f"{setting}.node_selector.{key}",
                    f"'{value}' is not a label value: use {_VALID_VALUE}",
                )
            )
    for plan in plans:
        if selector and any(
            all(shape.labels.get(k) == v for k, v in selector.items()) for shape in plan.node_shapes
        ):
            findings.append(
                _error(
                    f"{setting}.node_selector",
                    f"{dict(selector)} selects pool '{plan.name}', whose GPU nodes are tainted: "
                    f"the {setting} pod would stay Pending there (or keep a GPU node from "
                    "scaling down): select the system nodes",
                )
            )
    return findings


def check_expander(settings: AutoscalerSettings, node_groups: int) -> list[Finding]:
    """The expander against the node groups known so far (0: none yet, maybe added later)."""
    if settings.enabled and settings.expander == "least-waste" and node_groups != 1:
        return [
            _warning(
                "autoscaler.expander",
                "'least-waste' scores CPU and memory only: among GPU node groups that fit a pod "
                "it picks at random (a p5.48xlarge as likely as a g5.xlarge); use 'priority', "
                "which prefers fewer GPUs per node, then cheaper families",
            )
        ]
    return []


def _check_placement(settings: AppSettings) -> Iterator[Finding]:
    existing = settings.cluster.existing
    if existing is not None:
        for zone in existing.subnets_by_zone:
            if not _ZONE.match(zone):
                yield _error(
                    "cluster.existing.subnets_by_zone",
                    f"'{zone}' is not an availability zone name such as us-east-1a",
                )
            elif settings.region and zone[:-1] != settings.region:
                yield _error(
                    "cluster.existing.subnets_by_zone",
                    f"'{zone}' is not in region {settings.region}, where the stack and the "
                    "cluster are: use that region's subnets",
                )
    for prefix, pool in settings.pool_settings():
        zones = pool.zones
        if existing is not None:
            missing = [z for z in zones if z not in existing.subnets_by_zone]
            if missing:
                yield _error(
                    f"{prefix}.zones",
                    f"{', '.join(missing)} not in cluster.existing.subnets_by_zone "
                    f"({', '.join(existing.subnets_by_zone)}): add its subnets or drop the zone",
                )
            continue
        if zones and settings.region is None:
            yield _error(
                f"{prefix}.zones",
                "needs region: zone names only mean something in a known region",
            )
        for zone in zones:
            if settings.region and _ZONE.match(zone) and zone[:-1] != settings.region:
                yield _error(f"{prefix}.zones", f"'{zone}' is not in region {settings.region}")


def check_zones_known(settings: AppSettings, known: Sequence[str]) -> list[Finding]:
    """A new cluster's pool zones against the zones the stack knows for its region (the
    availability-zones lookup cached in cdk.context.json); nothing to say before the lookup."""
    if settings.cluster.existing is not None or not known:
        return []
    return [
        _error(
            f"{prefix}.zones",
            f"'{zone}' is not an availability zone of {settings.region} this account has "
            f"({', '.join(known)}, from cdk.context.json): choose among them",
        )
        for prefix, pool in settings.pool_settings()
        for zone in pool.zones
        if zone not in known
    ]


def check_cli_pin(package_json: Path) -> list[Finding]:
    """The CDK CLI must be pinned to an exact version in package.json."""
    if not package_json.is_file():
        return []
    pins = json.loads(package_json.read_text(encoding="utf-8")).get("devDependencies", {})
    version = pins.get("aws-cdk")
    if version is None or not EXACT_VERSION.match(version):
        return [
            _error(
                "package.json devDependencies.aws-cdk",
                f'{version!r} is not an exact version; pin the CDK CLI, e.g. "2.1148.1"',
            )
        ]
    return []
