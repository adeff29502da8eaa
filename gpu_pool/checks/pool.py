"""The rules about one GPU pool on its own: its instance types, GPU software, labels and
taints, ASG tag budget, sizes, disk, zones, reserved capacity and EFA."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gpu_pool.checks.auto_mode import check_auto_mode_pool
from gpu_pool.checks.dra import check_dra_pool
from gpu_pool.checks.karpenter import check_karpenter_pool
from gpu_pool.checks.reserved import check_training
from gpu_pool.checks.sharing import check_sharing
from gpu_pool.checks.syntax import (
    LABEL_VALUE,
    QUALIFIED_KEY,
    VALID_KEY,
    VALID_VALUE,
    exact_versions,
    pairs,
)
from gpu_pool.checks.volume_key import check_volume_key
from gpu_pool.model.ami import nvidia_ami_type
from gpu_pool.model.aws_names import is_zone
from gpu_pool.model.catalog import Architecture, GpuInstanceType
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.labels import (
    ACCELERATOR_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_PRESENT_LABEL,
    MIG_CONFIG_LABEL,
    OPERANDS_LABEL,
    POOL_LABEL,
    RESERVED_LABELS,
)
from gpu_pool.plan.gpu_software import is_bottlerocket
from gpu_pool.plan.node_pool import KUBERNETES_ARCH
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.settings import PoolSettings

EKS_OWN_ASG_TAGS = 3
MAX_ASG_TAGS = 50
MIN_RECOMMENDED_DISK_GIB = 100
MAX_DISK_GIB = 16384  # gp3 volume limit
# EKS's quota "Nodes per managed node group" (Service Quotas code L-BD136A63), 450 by default
# (EKS user guide, "Amazon EKS service quotas"): EKS refuses a node group's scaling
# configuration above the account's value.
NODES_PER_NODE_GROUP = 450
NODES_PER_NODE_GROUP_QUOTA = "L-BD136A63"
# Kubernetes' largest supported cluster: "No more than 5,000 nodes" (kubernetes.io,
# "Considerations for large clusters"). A NodePool's node limit above it is a typing slip, not
# a plan.
MAX_CLUSTER_NODES = 5000


def check_pool(plan: PoolPlan) -> list[Finding]:
    """Every rule about one GPU pool on its own."""
    pool, prefix = plan.settings, plan.setting
    findings = list(plan.unresolved)
    if not pool.instance_types:
        findings.append(
            error(
                "GP-POOL-01",
                f"{prefix}.instance_types",
                "empty; list at least one, e.g. ['g5.xlarge']",
            )
        )
    findings += _check_entries(plan)
    findings += _check_architectures(plan)
    findings += _check_gpu_software(plan)
    findings += check_dra_pool(plan)
    findings += check_sharing(plan)
    findings += _check_versions(pool, prefix)
    findings += _check_labels_and_taints(plan)
    if plan.karpenter is not None:
        findings += check_karpenter_pool(plan.karpenter)
        findings += _check_node_pool_limit(pool, prefix)
    elif plan.auto_mode is not None:
        findings += check_auto_mode_pool(plan.auto_mode)
        findings += _check_node_pool_limit(pool, prefix)
    else:
        findings += _check_scaling(pool, prefix)
        if "karpenter" in pool.model_fields_set:
            findings.append(
                warning(
                    "GP-POOL-02",
                    f"{prefix}.karpenter",
                    "is used with provisioner: karpenter or auto-mode only; this pool's node "
                    "groups ignore it: remove it, or set one of those provisioners",
                )
            )
    findings += _check_disk(pool, prefix)
    findings += check_volume_key(plan)
    findings += _check_zones(pool.zones, prefix)
    if plan.auto_mode is None:  # Auto Mode refuses the training settings (checks/auto_mode.py)
        findings += check_training(plan)
    return findings


def _check_architectures(plan: PoolPlan) -> Iterator[Finding]:
    """Types of two CPU architectures in one pool: its nodes work on either (a node group has
    one AMI of its own; a Karpenter AMI alias resolves an image per architecture,
    aws/karpenter-provider-aws pkg/providers/amifamily/al2023.go DescribeImageQuery; Auto Mode
    picks its own per type; the NVIDIA device plugin's image is multi-arch), but a pending pod
    without a kubernetes.io/arch selector may get a node of either, and a container image built
    for one architecture cannot start on the other."""
    types = [t for group in plan.entries for t in group]
    arches = sorted({t.architecture for t in types}, key=KUBERNETES_ARCH.__getitem__)
    one_group_mixes = any(len({t.architecture for t in group}) > 1 for group in plan.entries)
    if len(arches) < 2 or (one_group_mixes and plan.provisioner == "cluster-autoscaler"):
        return  # (a node group of two architectures is an error of its own)
    listed = "; ".join(
        f"{KUBERNETES_ARCH[a]}: {', '.join(t.name for t in types if t.architecture is a)}"
        for a in arches
    )
    yield warning(
        "GP-POOL-31",
        f"{plan.setting}.instance_types",
        f"mixes CPU architectures ({listed}): a pending pod may get a node of either, and a "
        "container image built for one architecture fails on the other's (exec format "
        "error); put each architecture in a pool of its own, or give every pod of this pool "
        "a kubernetes.io/arch nodeSelector",
    )


def _check_entries(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix = plan.settings, plan.setting
    node_groups = plan.provisioner == "cluster-autoscaler"
    # The other provisioners ignore ami_type (their own rules warn).
    if node_groups and pool.ami_type and not pool.ami_type.startswith(pool.ami_family):
        family = pool.ami_type.split("_", 1)[0]
        yield error(
            "GP-POOL-03",
            f"{prefix}.ami_type",
            f"'{pool.ami_type}' is a {family} AMI but ami_family is {pool.ami_family}: drop "
            f"ami_type (it is derived from ami_family) or set ami_family: {family}",
        )
    first_entry: dict[str, int] = {}
    for index, group in enumerate(plan.entries):
        setting = f"{prefix}.instance_types[{index}]"
        for gpu_type in group:
            if gpu_type.name in first_entry:
                yield error(
                    "GP-POOL-04",
                    setting,
                    f"'{gpu_type.name}' is listed again (first in instance_types"
                    f"[{first_entry[gpu_type.name]}]); a type belongs to one node group: "
                    "remove one",
                )
            first_entry.setdefault(gpu_type.name, index)
        if node_groups:
            yield from _check_node_group_entry(pool, prefix, setting, group)


def _check_node_group_entry(
    pool: PoolSettings, prefix: str, setting: str, group: Sequence[GpuInstanceType]
) -> Iterator[Finding]:
    """One node group's types: one GPU count (its node template has one), one architecture
    (one AMI), and an AMI type that runs on them."""
    counts = {t.name: t.gpu_count for t in group}
    if len(set(counts.values())) > 1:
        yield error(
            "GP-POOL-05",
            setting,
            f"instance types differ in GPU count ({pairs(counts)}); the autoscaler's node "
            "template has one count per node group: put them in separate entries",
        )
    arches = {t.name: t.architecture.value for t in group}
    if len(set(arches.values())) > 1:
        yield error(
            "GP-POOL-06",
            setting,
            f"instance types differ in CPU architecture ({pairs(arches)}); a node group has "
            "one AMI: put them in separate entries",
        )
    if pool.ami_type:
        family = pool.ami_type.split("_", 1)[0]
        for gpu_type in group:
            if ("ARM_64" in pool.ami_type) != (gpu_type.architecture is Architecture.ARM64):
                yield error(
                    "GP-POOL-07",
                    f"{prefix}.ami_type",
                    f"{pool.ami_type} does not run on {gpu_type.name} "
                    f"({gpu_type.architecture.value}): use "
                    f"{nvidia_ami_type(family, gpu_type.architecture)}, or leave ami_type "
                    "unset to derive it from the instance type",
                )


def _check_gpu_software(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix, software = plan.settings, plan.setting, plan.gpu_software
    if plan.auto_mode is not None:
        return  # Auto Mode ships its own plugin: checks/auto_mode.py
    bottlerocket = is_bottlerocket(pool)
    setting = f"{prefix}.gpu_software"
    if software == "none" and not bottlerocket:
        yield error(
            "GP-POOL-08",
            setting,
            "'none' on AL2023: its NVIDIA AMI carries no device plugin, so nodes would advertise "
            "no nvidia.com/gpu and GPU pods stay Pending; use 'device-plugin' or 'gpu-operator'",
        )
    if software == "device-plugin" and bottlerocket:
        yield error(
            "GP-POOL-09",
            setting,
            "'device-plugin' on Bottlerocket: its NVIDIA AMI ships the device plugin, a second "
            "one would fight it; use 'none' (or 'gpu-operator', which then skips its own plugin)",
        )
    if software == "gpu-operator":
        for part in ("driver", "toolkit"):
            if getattr(pool.gpu_operator, f"{part}_enabled"):
                yield error(
                    "GP-POOL-10",
                    f"{prefix}.gpu_operator.{part}_enabled",
                    f"true, but the EKS NVIDIA AMIs already carry the {part}; a second one "
                    "breaks the node's GPU stack: set it to false",
                )


def _check_versions(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    yield from exact_versions(f"{prefix}.versions", pool.versions.model_dump())


_RESERVED_WHY = {
    POOL_LABEL: "it names the pool; its device plugin selects nodes by it",
    GPU_PRESENT_LABEL: "the device plugin's affinity needs it on every GPU node",
    ACCELERATOR_LABEL: "Cluster Autoscaler reads the GPU model from it",
    OPERANDS_LABEL: "it keeps the GPU Operator off pools that do not use it",
    DEVICE_PLUGIN_CONFIG_LABEL: "it picks the pool's device plugin config: set pool.sharing",
    MIG_CONFIG_LABEL: "it picks the pool's MIG layout: set pool.sharing",
}


def _check_labels_and_taints(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix = plan.settings, plan.setting
    for key, value in pool.labels.items():
        if key in RESERVED_LABELS:
            yield error(
                "GP-POOL-11",
                f"{prefix}.labels",
                f"'{key}' is set by gpu-pool itself ({_RESERVED_WHY[key]}): remove it",
            )
        elif not QUALIFIED_KEY.match(key):
            yield error(
                "GP-POOL-12", f"{prefix}.labels", f"'{key}' is not a label key: use {VALID_KEY}"
            )
        if not LABEL_VALUE.match(value):
            yield error(
                "GP-POOL-13",
                f"{prefix}.labels.{key}",
                f"'{value}' is not a label value: use {VALID_VALUE}",
            )
    seen = set()
    for index, taint in enumerate(pool.taints):
        setting = f"{prefix}.taints[{index}]"
        if not QUALIFIED_KEY.match(taint.key):
            yield error(
                "GP-POOL-14", setting, f"key '{taint.key}' is not a taint key: use {VALID_KEY}"
            )
        if ":" in taint.value:
            yield error(
                "GP-POOL-15",
                setting,
                f"value '{taint.value}' contains ':'; Cluster Autoscaler's taint tag is "
                "value:Effect and would misread it: choose a value without ':'",
            )
        elif not LABEL_VALUE.match(taint.value):
            yield error(
                "GP-POOL-16",
                setting,
                f"value '{taint.value}' is not a taint value: use {VALID_VALUE}",
            )
        if not taint.value:
            yield warning(
                "GP-POOL-17",
                setting,
                f"taint '{taint.key}' has no value; pods tolerating it with operator Equal and a "
                "value (as most examples do) will not match: give it a value, e.g. 'true'",
            )
        if (taint.key, taint.effect) in seen:
            yield error(
                "GP-POOL-18", setting, f"duplicate taint '{taint.key}' with effect {taint.effect}"
            )
        seen.add((taint.key, taint.effect))
    if not pool.taints:
        yield warning(
            "GP-POOL-19",
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
            yield error(
                "GP-POOL-20",
                f"{plan.setting}.labels",
                f"labels and taints need {len(tags)} ASG tags, plus {EKS_OWN_ASG_TAGS} EKS adds: "
                f"{total}, over Auto Scaling's {MAX_ASG_TAGS} per group; use fewer labels/taints",
            )
        for key, value in tags.items():
            if len(key) > 128 or len(value) > 256:
                yield error(
                    "GP-POOL-21",
                    f"{plan.setting}.labels",
                    f"ASG tag '{key}' is longer than Auto Scaling allows (key 128, value 256)",
                )


def _check_node_pool_limit(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    """A NodePool's node limit has no EKS quota of its own; far above any cluster's size it is
    a slip that prices the pool at its limit."""
    if pool.max_size > MAX_CLUSTER_NODES:
        yield warning(
            "GP-POOL-33",
            f"{prefix}.max_size",
            f"{pool.max_size} nodes is above the {MAX_CLUSTER_NODES} Kubernetes supports in one "
            "cluster (kubernetes.io, 'Considerations for large clusters'): the NodePool's limit "
            "stops nothing, and plan prices the pool at it; set the most nodes the pool may "
            "really run",
        )


def _check_scaling(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    sizes = {
        "min_size": pool.min_size,
        "desired_size": pool.desired_size,
        "max_size": pool.max_size,
    }
    for name, value in sizes.items():
        if value < 0:
            yield error(
                "GP-POOL-22", f"{prefix}.{name}", f"{value} is negative; sizes are 0 or more"
            )
    if pool.max_size == 0:
        yield error(
            "GP-POOL-23",
            f"{prefix}.max_size",
            "0: the pool could never run a GPU node; set 1 or more",
        )
    if pool.max_size > NODES_PER_NODE_GROUP:
        yield error(
            "GP-POOL-32",
            f"{prefix}.max_size",
            f"{pool.max_size} is above the nodes EKS allows a managed node group (its quota "
            f"'Nodes per managed node group', {NODES_PER_NODE_GROUP_QUOTA}: "
            f"{NODES_PER_NODE_GROUP} unless raised): EKS refuses the node group at deploy; set "
            f"{NODES_PER_NODE_GROUP} or less, or spread the nodes over more pools",
        )
    if pool.min_size > pool.max_size:
        yield error(
            "GP-POOL-24", f"{prefix}.min_size", f"{pool.min_size} is above max_size {pool.max_size}"
        )
    elif not pool.min_size <= pool.desired_size <= pool.max_size:
        yield error(
            "GP-POOL-25",
            f"{prefix}.desired_size",
            f"{pool.desired_size} is outside [min_size {pool.min_size}, max_size {pool.max_size}]",
        )
    # DRA needs it (GP-DRA-10, GP-EFA-06).
    dra = pool.gpu_software == "dra-driver" or (pool.efa and pool.efa_software == "dra-driver")
    if pool.min_size > 0 and not dra:
        yield warning(
            "GP-POOL-26",
            f"{prefix}.min_size",
            f"{pool.min_size}: that many GPU nodes per node group run (and bill) even when idle; "
            "0 lets the pool scale to zero",
        )


def _check_disk(pool: PoolSettings, prefix: str) -> Iterator[Finding]:
    setting = f"{prefix}.disk_size_gib"
    if not 1 <= pool.disk_size_gib <= MAX_DISK_GIB:
        yield error("GP-POOL-27", setting, f"{pool.disk_size_gib} is outside 1..{MAX_DISK_GIB} GiB")
    elif pool.disk_size_gib < MIN_RECOMMENDED_DISK_GIB:
        yield warning(
            "GP-POOL-28",
            setting,
            f"{pool.disk_size_gib} GiB: CUDA images are several GiB each and pods get evicted "
            f"under disk pressure; use {MIN_RECOMMENDED_DISK_GIB} or more (default 200)",
        )


def _check_zones(zones: Sequence[str], prefix: str) -> Iterator[Finding]:
    for zone in zones:
        if not is_zone(zone):
            yield error(
                "GP-POOL-29",
                f"{prefix}.zones",
                f"'{zone}' is not an availability zone name such as us-east-1a (or a Local "
                "Zone's, such as us-east-1-dfw-2a)",
            )
    if len(set(zones)) != len(zones):
        yield error("GP-POOL-30", f"{prefix}.zones", "lists a zone twice")
