"""The rules about the controllers gpu-pool installs: Cluster Autoscaler's pins and expander,
Karpenter's version and needs, and where each may run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpu_pool.checks.syntax import (
    LABEL_VALUE,
    QUALIFIED_KEY,
    VALID_KEY,
    VALID_VALUE,
    exact_versions,
)
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.versions import (
    EXACT_VERSION,
    KARPENTER,
    KARPENTER_MIN_VERSION,
    autoscaler_image_tag,
    version_key,
)
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.settings import AppSettings, AutoscalerSettings


def check_karpenter_install(settings: AppSettings, minor: str) -> list[Finding]:
    findings = list(
        exact_versions("karpenter", {"chart_version": settings.karpenter.chart_version})
    )
    findings += check_karpenter_version(settings.karpenter.chart_version, minor)
    existing = settings.cluster.existing
    if existing is not None and existing.cluster_security_group_id is None:
        findings.append(
            error(
                "GP-CTRL-01",
                "cluster.existing.cluster_security_group_id",
                "required with a karpenter pool: Karpenter puts its nodes in the cluster "
                "security group; copy it from `aws eks describe-cluster` "
                "(resourcesVpcConfig.clusterSecurityGroupId)",
            )
        )
    return findings


def check_chart_registry_login(handler_role: str | None) -> list[Finding]:
    """Karpenter's charts on an imported cluster: its kubectl handler logs in to public.ecr.aws
    to pull them and fails the deploy if it may not (aws-cdk-lib 2.275 aws_eks_v2
    kubectl-handler/helm get_chart_from_oci). Only a cluster aws_eks_v2 creates gives its handler
    role AmazonElasticContainerRegistryPublicReadOnly (kubectl-provider.ts, condition
    HasEcrPublic); an imported role is someone else's, so this warns instead of granting."""
    role = handler_role or "(the kubectl provider's handler role)"
    return [
        warning(
            "GP-CTRL-02",
            "cluster.existing.kubectl_provider_role_arn",
            "Karpenter's charts come from oci://public.ecr.aws, which the imported cluster's "
            f"kubectl handler role {role} must log in to, or the deploy fails and rolls back: "
            "make sure that role has the AWS managed policy "
            "AmazonElasticContainerRegistryPublicReadOnly (a cluster created by aws_eks_v2 "
            "gives its own handler role that policy)",
        )
    ]


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
                error(
                    "GP-CTRL-03",
                    "cluster.kubernetes_version",
                    "unknown for an imported cluster, so no Cluster Autoscaler image can be "
                    "chosen (its minor must equal the cluster's): pass kubernetes_version or set "
                    "autoscaler.image_tag",
                )
            )
        elif autoscaler_image_tag(minor) is None:
            findings.append(
                error(
                    "GP-CTRL-04",
                    "cluster.kubernetes_version",
                    f"no Cluster Autoscaler image is pinned for {minor} (its minor must equal "
                    f"the cluster's): set autoscaler.image_tag to a v{minor}.x release, move the "
                    "cluster to another minor (an existing cluster's is its control plane's: "
                    "upgrade it), or set autoscaler.enabled: false",
                )
            )
    elif (
        minor is not None
        and EXACT_VERSION.match(tag)
        and not tag.lstrip("v").startswith(f"{minor}.")
    ):
        findings.append(
            error(
                "GP-CTRL-05",
                "autoscaler.image_tag",
                f"'{tag}' does not match the cluster's minor {minor}; Cluster Autoscaler "
                f"supports only its own minor: use a v{minor}.x tag",
            )
        )
    return findings


def check_node_selector(
    selector: Mapping[str, str], plans: Sequence[PoolPlan], setting: str = "autoscaler"
) -> list[Finding]:
    """A controller's nodeSelector (`<setting>.node_selector`: the autoscaler's or
    Karpenter's): valid labels, and never a GPU pool's nodes."""
    findings = []
    for key, value in selector.items():
        if not QUALIFIED_KEY.match(key):
            findings.append(
                error(
                    "GP-CTRL-06",
                    f"{setting}.node_selector",
                    f"'{key}' is not a label key: use {VALID_KEY}",
                )
            )
        if not LABEL_VALUE.match(value):
            findings.append(
                error(
                    "GP-CTRL-07",
                    f"{setting}.node_selector.{key}",
                    f"'{value}' is not a label value: use {VALID_VALUE}",
                )
            )
    return findings + check_selector_avoids_pools(selector, plans, setting)


def check_selector_avoids_pools(
    selector: Mapping[str, str], plans: Sequence[PoolPlan], setting: str
) -> list[Finding]:
    """A controller's nodeSelector selects none of the GPU pools' nodes."""
    return [
        error(
            "GP-CTRL-08",
            f"{setting}.node_selector",
            f"{dict(selector)} selects pool '{plan.name}', whose GPU nodes are tainted: "
            f"the {setting} pod would stay Pending there (or keep a GPU node from "
            "scaling down): select the system nodes",
        )
        for plan in plans
        if selector
        and any(
            all(shape.labels.get(k) == v for k, v in selector.items()) for shape in plan.node_shapes
        )
    ]


@dataclass(frozen=True)
class InstalledController:
    """A controller construct on a cluster, as the cluster-wide rules see it: `setting` is
    `autoscaler` or `karpenter`, `path` the construct's path."""

    setting: str
    path: str
    node_selector: Mapping[str, str]


# What each controller is called in messages, and the Helm release it installs.
CONTROLLER_RELEASES = {
    "autoscaler": ("ClusterAutoscaler", "cluster-autoscaler"),
    "karpenter": ("Karpenter", "karpenter"),
}


def check_one_of_each(controllers: Sequence[InstalledController]) -> list[Finding]:
    """At most one Cluster Autoscaler and one Karpenter per cluster."""
    findings = []
    for setting, (kind, release) in CONTROLLER_RELEASES.items():
        paths = sorted(c.path for c in controllers if c.setting == setting)
        if len(paths) > 1:
            findings.append(
                error(
                    "GP-CTRL-09",
                    setting,
                    f"{kind} is added {len(paths)} times to one cluster ({', '.join(paths)}); "
                    f"each installs Helm release '{release}' in the same namespace, so all but "
                    "one fail to deploy: keep one",
                )
            )
    return findings


def check_pool_is_scaled(
    plan: PoolPlan, controllers: Sequence[InstalledController]
) -> list[Finding]:
    """A node-group pool at min 0 needs a Cluster Autoscaler to ever start a node."""
    if (
        plan.provisioner != "cluster-autoscaler"
        or plan.settings.min_size > 0
        or any(c.setting == "autoscaler" for c in controllers)
    ):
        return []
    return [
        warning(
            "GP-CTRL-10",
            f"{plan.setting}.min_size",
            "0, and no ClusterAutoscaler is added to this cluster: nothing starts the pool's "
            "first node unless a Cluster Autoscaler already runs on the cluster; add "
            "ClusterAutoscaler, or a min_size above 0",
        )
    ]


def check_expander(settings: AutoscalerSettings, node_groups: int) -> list[Finding]:
    """The expander against the node groups known so far (0: none yet, maybe added later)."""
    if settings.enabled and settings.expander == "least-waste" and node_groups != 1:
        return [
            warning(
                "GP-CTRL-11",
                "autoscaler.expander",
                "'least-waste' scores CPU and memory only: among GPU node groups that fit a pod "
                "it picks at random (a p5.48xlarge as likely as a g5.xlarge); use 'priority', "
                "which prefers fewer GPUs per node, then cheaper families",
            )
        ]
    return []


def check_karpenter_version(chart_version: str | None, minor: str | None) -> list[Finding]:
    """The Karpenter version against the cluster's Kubernetes minor (its compatibility
    matrix); `minor` None (an imported cluster without kubernetes_version) is not judged."""
    version = chart_version or KARPENTER.version
    if minor is None or not EXACT_VERSION.match(version):
        return []  # unknown minor, or not a version (the exact-version rule says so)
    oldest = KARPENTER_MIN_VERSION.get(minor)
    if oldest is None:
        return [
            error(
                "GP-CTRL-12",
                "cluster.kubernetes_version",
                f"Karpenter's compatibility matrix starts at "
                f"{min(KARPENTER_MIN_VERSION, key=version_key)}; {minor} is not in it: upgrade the "
                "cluster, or use provisioner: cluster-autoscaler",
            )
        ]
    if version_key(version) < version_key(oldest):
        return [
            error(
                "GP-CTRL-13",
                "karpenter.chart_version",
                f"Karpenter {version} does not support Kubernetes {minor} (it needs {oldest} or "
                f"newer): use {KARPENTER.version}, or leave it unset",
            )
        ]
    return []
