"""The rules that need to know where a pool goes: the cluster's Kubernetes minor and the stack's
Region. The app knows both from its settings; a construct knows what its cluster and stack say
(None where they do not say it, e.g. an imported cluster or an environment-agnostic stack)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date

from gpu_pool.checks.dra import check_dra_target
from gpu_pool.checks.efa_dra import check_efa_dra_target
from gpu_pool.checks.ultraserver import check_ultraserver_minor
from gpu_pool.model.findings import Finding, error
from gpu_pool.plan.pool import PoolPlan

# An EKS release version: `<kubernetes>-<YYYYMMDD>` for the Amazon Linux AMIs (1.35.2-20261120),
# `<bottlerocket os>-<commit>` for Bottlerocket (1.47.0-6154605b) (EKS API reference,
# Nodegroup.releaseVersion; EKS user guide, "Retrieve Bottlerocket AMI IDs").
_RELEASE = re.compile(r"^(?P<major>[0-9]+)\.(?P<minor>[0-9]+)\.[0-9]+-(?P<build>[0-9A-Za-z]+)$")
# An EBS volume is encrypted only with a KMS key of its own Region (EBS user guide, "How EBS
# encryption works"); the key ARN's fourth field is that Region.
_KMS_REGION = re.compile(r"^arn:aws[a-z-]*:kms:(?P<region>[a-z0-9-]+):")


def check_pool_target(
    plan: PoolPlan, kubernetes_minor: str | None, region: str | None
) -> list[Finding]:
    """A pool's settings against its cluster's minor and its stack's Region (None: unknown)."""
    return [
        *_check_release_version(plan, kubernetes_minor),
        *_check_kms_region(plan, region),
        *check_ultraserver_minor(plan, kubernetes_minor),
        *check_dra_target(plan, kubernetes_minor),
        *check_efa_dra_target(plan, kubernetes_minor),
    ]


def _check_release_version(plan: PoolPlan, kubernetes_minor: str | None) -> Iterator[Finding]:
    version = plan.settings.ami_release_version
    match = _RELEASE.match(version or "")
    if plan.provisioner != "cluster-autoscaler" or version is None or match is None:
        return
    setting = f"{plan.setting}.ami_release_version"
    dated = _is_date(match["build"])
    if plan.settings.ami_family == "BOTTLEROCKET":
        if dated:
            yield error(
                "GP-TARGET-01",
                setting,
                f"'{version}' is an Amazon Linux release (Kubernetes version-date); a "
                "Bottlerocket node group takes a Bottlerocket release such as 1.47.0-6154605b, "
                "or none for the newest",
            )
        return
    if not dated:
        yield error(
            "GP-TARGET-02",
            setting,
            f"'{version}' is not an AL2023 release (Kubernetes version-date, e.g. "
            "1.35.2-20261120); EKS refuses it for an AL2023 node group",
        )
        return
    minor = f"{match['major']}.{match['minor']}"
    if kubernetes_minor is not None and minor != kubernetes_minor:
        yield error(
            "GP-TARGET-03",
            setting,
            f"'{version}' is a Kubernetes {minor} AMI, but the node groups run "
            f"{kubernetes_minor}; EKS refuses a release of another minor: use a "
            f"{kubernetes_minor}.x release, or none for the newest",
        )


def _is_date(build: str) -> bool:
    if not re.fullmatch(r"20[0-9]{6}", build):
        return False
    try:
        date(int(build[:4]), int(build[4:6]), int(build[6:]))
    except ValueError:
        return False
    return True


def _check_kms_region(plan: PoolPlan, region: str | None) -> Iterator[Finding]:
    match = _KMS_REGION.match(plan.settings.volume_kms_key_arn or "")
    if match is not None and region is not None and match["region"] != region:
        yield error(
            "GP-TARGET-04",
            f"{plan.setting}.volume_kms_key_arn",
            f"the key is in {match['region']}, the pool's volumes in {region}; EBS encrypts a "
            "volume only with a key of its own Region, so every node launch would fail: use a "
            f"key (or a multi-Region replica) in {region}",
        )
