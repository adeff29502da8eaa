"""The rules about the app's settings beyond each pool: Kubernetes version, endpoint, zones and
subnets, system nodes, the CDK CLI pin."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path

from gpu_pool.checks.controllers import check_autoscaler, check_karpenter_install
from gpu_pool.model.aws_names import is_local_zone, is_zone, zone_group, zone_region
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.versions import DEFAULT_KUBERNETES_VERSION, EXACT_VERSION, KUBERNETES_RELEASES
from gpu_pool.settings import AppSettings, ClusterSettings


def creatable_minors(today: date) -> list[str]:
    """The minors EKS still creates clusters of on `today`: the only ones worth suggesting (a
    minor past its extended support is refused by GP-APP-02 as soon as it is chosen)."""
    return [m for m, r in KUBERNETES_RELEASES.items() if today <= r.eks_creates_until]


def check_app(settings: AppSettings, today: date | None = None) -> list[Finding]:
    """The rules about the app's settings beyond each pool (GpuNodePool checks the pools)."""
    today = today or date.today()
    findings: list[Finding] = list(_check_empty_pool_keys(settings))
    cluster = settings.cluster
    release = KUBERNETES_RELEASES.get(cluster.kubernetes_version)
    if release is None:
        # An existing cluster's minor is its control plane's (looked up): the cluster moves.
        upgrade = (
            f" (an existing cluster's is its control plane's: upgrade {cluster.name} to one)"
            if cluster.existing is not None
            else ""
        )
        findings.append(
            error(
                "GP-APP-01",
                "cluster.kubernetes_version",
                f"'{cluster.kubernetes_version}' is not supported; choose one of "
                f"{', '.join(creatable_minors(today))}{upgrade}",
            )
        )
        return findings
    if today > release.eks_creates_until and cluster.existing is None:
        findings.append(
            error(
                "GP-APP-02",
                "cluster.kubernetes_version",
                f"EKS no longer creates {release.minor} clusters (extended support ended "
                f"{release.eks_creates_until}), so the cluster would fail to create: use "
                f"{DEFAULT_KUBERNETES_VERSION}",
            )
        )
    elif today > release.eks_creates_until:
        # An existing cluster's: the cluster moves first, then what the stack reads of it.
        findings.append(
            warning(
                "GP-APP-03",
                "cluster.kubernetes_version",
                f"{release.minor} left EKS extended support on {release.eks_creates_until}, and "
                "EKS upgrades such clusters itself at a time of its choosing: upgrade "
                f"{cluster.name} on yours (aws eks update-cluster-version); the stack follows "
                "once it reads the new minor, from the cluster's lookup taken again (`cdk "
                "context --reset` its entry) or, where nothing is looked up, from "
                "cluster.kubernetes_version",
            )
        )
    findings += _check_endpoint(cluster)
    layer = cluster.kubectl_layer_version
    if layer is not None and layer != release.minor:
        findings.append(
            error(
                "GP-APP-04",
                "cluster.kubectl_layer_version",
                f"'{layer}' does not match the cluster's {release.minor}; kubectl must match the "
                f"API server's minor: remove the setting or set '{release.minor}'",
            )
        )
    if uses_autoscaler(settings):
        # Errors only: ClusterAutoscaler reports its findings itself, warnings included.
        findings += [f for f in check_autoscaler(settings.autoscaler, release.minor) if f.error]
    if uses_karpenter(settings):
        findings += check_karpenter_install(settings, release.minor)
    findings += _check_placement(settings)
    system = cluster.system_nodes
    if not 0 <= system.min_size <= system.desired_size <= system.max_size or system.max_size < 1:
        findings.append(
            error(
                "GP-APP-05",
                "cluster.system_nodes",
                f"sizes min {system.min_size}, desired {system.desired_size}, max "
                f"{system.max_size} must satisfy 0 <= min <= desired <= max, max >= 1",
            )
        )
    return findings


def _check_empty_pool_keys(settings: AppSettings) -> Iterator[Finding]:
    """`pool:` or `pools:` given with nothing under it (YAML reads null; typically every line
    under it is commented out): the app would deploy the default pool without a word."""
    for key in ("pool", "pools"):
        if key in settings.model_fields_set and getattr(settings, key) is None:
            yield warning(
                "GP-APP-06",
                key,
                "is empty (nothing under it, or every line commented out), so the default pool "
                "applies: one pool 'gpu' of g5.xlarge nodes; give it settings or remove the key",
            )


def uses_autoscaler(settings: AppSettings) -> bool:
    """Whether the app installs Cluster Autoscaler: enabled, and some pool uses it."""
    return settings.autoscaler.enabled and any(
        pool.provisioner == "cluster-autoscaler" for _, pool in settings.pool_settings()
    )


def uses_karpenter(settings: AppSettings) -> bool:
    """Whether the app installs Karpenter: some pool uses it."""
    return any(pool.provisioner == "karpenter" for _, pool in settings.pool_settings())


def _check_endpoint(cluster: ClusterSettings) -> Iterator[Finding]:
    narrowed = cluster.public_access_cidrs != ["0.0.0.0/0"]
    if cluster.existing is None and narrowed and cluster.endpoint_access == "private":
        yield error(
            "GP-APP-09",
            "cluster.public_access_cidrs",
            "set, but endpoint_access is private (there is no public endpoint): remove it",
        )
    if cluster.existing is None and narrowed and cluster.endpoint_access == "public":
        yield error(
            "GP-APP-10",
            "cluster.public_access_cidrs",
            "with endpoint_access public the nodes reach the API over the internet, so it "
            "cannot be narrowed: use endpoint_access public_and_private to narrow it",
        )


def _check_placement(settings: AppSettings) -> Iterator[Finding]:
    existing = settings.cluster.existing
    if existing is not None:
        for zone in existing.subnets_by_zone:
            if not is_zone(zone):
                yield error(
                    "GP-APP-11",
                    "cluster.existing.subnets_by_zone",
                    f"'{zone}' is not an availability zone name such as us-east-1a (or a Local "
                    "Zone's, such as us-east-1-dfw-2a)",
                )
            elif settings.region and zone_region(zone) != settings.region:
                yield error(
                    "GP-APP-12",
                    "cluster.existing.subnets_by_zone",
                    f"'{zone}' is not in region {settings.region}, where the stack and the "
                    "cluster are: use that region's subnets",
                )
    for prefix, pool in settings.pool_settings():
        zones = pool.zones
        other_region = [
            z for z in zones if settings.region and is_zone(z) and zone_region(z) != settings.region
        ]
        for zone in other_region:
            yield error(
                "GP-APP-15", f"{prefix}.zones", f"'{zone}' is not in region {settings.region}"
            )
        if existing is not None:
            missing = [
                z for z in zones if z not in existing.subnets_by_zone and z not in other_region
            ]
            if missing:
                yield error(
                    "GP-APP-13",
                    f"{prefix}.zones",
                    f"{', '.join(missing)} not in cluster.existing.subnets_by_zone "
                    f"({', '.join(existing.subnets_by_zone)}): add its subnets or drop the zone",
                )
            continue
        if zones and settings.region is None:
            yield error(
                "GP-APP-14",
                f"{prefix}.zones",
                "needs region: zone names only mean something in a known region",
            )


def check_zones_known(settings: AppSettings, known: Sequence[str]) -> list[Finding]:
    """A new cluster's zones and its pools' against the zones the stack knows for its region
    (the availability-zones lookup cached in cdk.context.json); nothing to say before the
    lookup. The lookup lists a Local Zone only once the account has opted in to its group
    (DescribeAvailabilityZones without AllAvailabilityZones; EC2 API Reference), so a missing
    one is a missing opt-in (GP-APP-29); a Local Zone in cluster.zones is GP-APP-28's."""
    if settings.cluster.existing is not None or not known:
        return []
    named = [("cluster", settings.cluster.zones)] + [
        (prefix, pool.zones) for prefix, pool in settings.pool_settings()
    ]
    return [
        _not_opted_in(settings, prefix, zone, known)
        if is_local_zone(zone)
        else error(
            "GP-APP-16",
            f"{prefix}.zones",
            f"'{zone}' is not an availability zone of {settings.region} this account has "
            f"({', '.join(known)}, from cdk.context.json): choose among them",
        )
        for prefix, zones in named
        for zone in zones
        if zone not in known and not (prefix == "cluster" and is_local_zone(zone))
    ]


def _not_opted_in(settings: AppSettings, prefix: str, zone: str, known: Sequence[str]) -> Finding:
    key = f"availability-zones:account={settings.account}:region={settings.region}"
    return error(
        "GP-APP-29",
        f"{prefix}.zones",
        f"'{zone}' is not among the zones this account has in {settings.region} "
        f"({', '.join(known)}, from cdk.context.json): the lookup lists a Local Zone once the "
        "account has opted in to its group; check it with `aws ec2 "
        "describe-availability-zones --all-availability-zones --filters "
        f"Name=zone-name,Values={zone}`, opt in with `aws ec2 modify-availability-zone-group "
        f"--group-name {zone_group(zone)} --opt-in-status opted-in`, then `cdk context "
        f"--reset {key}` to look again",
    )


def check_cli_pin(package_json: Path) -> list[Finding]:
    """The CDK CLI must be pinned to an exact version in package.json."""
    if not package_json.is_file():
        return []
    pins = json.loads(package_json.read_text(encoding="utf-8")).get("devDependencies", {})
    version = pins.get("aws-cdk")
    if version is None or not EXACT_VERSION.match(version):
        return [
            error(
                "GP-APP-17",
                "package.json devDependencies.aws-cdk",
                f'{version!r} is not an exact version; pin the CDK CLI, e.g. "2.1148.1"',
            )
        ]
    return []
