"""The rules layer: every known way a GPU pool fails, found from settings and plans alone.

No CDK here: each rule returns Findings (model/findings.py); the constructs report them.
`check_settings` runs every rule over an app's settings in one order; `check_pool_on_cluster`
is the part a single pool construct runs when it joins a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from gpu_pool.checks.app import check_app, check_zones_known, uses_autoscaler, uses_karpenter
from gpu_pool.checks.between_pools import check_pool_among
from gpu_pool.checks.cluster import check_cluster, check_reservation_zones
from gpu_pool.checks.controllers import check_node_selector
from gpu_pool.checks.dra import check_karpenter_dra_version
from gpu_pool.checks.dra_scaling import check_dra_scaling
from gpu_pool.checks.efa_dra import (
    check_efa_dra_pool,
    check_efa_dra_scaling,
    check_one_efa_advertiser_per_node,
)
from gpu_pool.checks.existing_cluster import check_existing_cluster
from gpu_pool.checks.instance_store import check_instance_store
from gpu_pool.checks.metrics import check_metrics
from gpu_pool.checks.pool import check_pool
from gpu_pool.checks.region import (
    check_pool_region,
    check_reservation_region,
    check_vcpu_quotas,
    cluster_zone_names,
    reservations_in_region,
)
from gpu_pool.checks.repair import check_agent_installed, check_repair
from gpu_pool.checks.reserved import (
    check_efa_on_existing_cluster,
    check_karpenter_features,
    check_reservation_facts,
)
from gpu_pool.checks.target import check_pool_target
from gpu_pool.checks.ultraserver import check_ultraserver, check_ultraserver_block
from gpu_pool.model.findings import Finding
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.existing_cluster import ClusterFacts
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.region import RegionFacts
from gpu_pool.settings import AppSettings


def check_pool_on_cluster(plan: PoolPlan, others: Sequence[PoolPlan]) -> list[Finding]:
    """A pool's rules: on its own, then against the pools already on its cluster (`others`)."""
    own = [
        *check_dra_scaling(plan),
        *check_ultraserver(plan),
        *check_instance_store(plan),
        *check_repair(plan, others),
        *check_efa_dra_pool(plan),
        *check_efa_dra_scaling(plan),
        *check_one_efa_advertiser_per_node([*others, plan], plan),
    ]
    return check_pool(plan) + own + check_pool_among(plan, others)


@dataclass(frozen=True)
class SettingsFindings:
    """What `check_settings` found: each pool's findings (in the order of `plans`), then the
    app's (cluster, zones, the controllers)."""

    pools: list[list[Finding]] = field(default_factory=list)
    app: list[Finding] = field(default_factory=list)

    def all(self) -> list[Finding]:
        """Every finding in the order the rules ran."""
        return [f for findings in self.pools for f in findings] + self.app


def check_settings(
    settings: AppSettings,
    plans: Sequence[PoolPlan],
    *,
    known_zones: Sequence[str] = (),
    today: date | None = None,
    reservations: Mapping[str, ReservationFacts | None] | None = None,
    region_facts: RegionFacts | None = None,
    cluster_facts: ClusterFacts | None = None,
) -> SettingsFindings:
    """Every rule over the app's settings and their `plans`, in one order: each pool on its own,
    against the pools before it, and against its cluster's minor and stack's Region; then the
    app (Kubernetes version, endpoint, zones, system nodes, the controllers' pins, GPU metrics
    and the pools they reach), the cluster's and pools' zones against `known_zones` (the
    region's zones from cdk.context.json; empty: not looked up yet), the cluster's own zones
    and Auto Mode, the Karpenter features the pools need, and where each controller in use
    runs. `reservations`: each reservation as looked up (pool name -> facts, None where EC2 has
    no such reservation in the stack's Region and account; a pool not in it is not judged): its
    Region must be the stack's, and a Capacity Block's zone one of the cluster's. `region_facts`:
    what the stack's Region offers, as looked up (None: nothing). `cluster_facts`: an existing
    cluster as looked up (None: not looked up), whose facts `settings` already hold."""
    minor, region = settings.cluster.kubernetes_version, settings.region
    every_reservation = reservations or {}
    # The pool's zone, type and size are judged against a Capacity Block only (reservations.py).
    blocks = {p.name for p in plans if (r := p.settings.capacity_reservation) and r.capacity_block}
    looked_up = {
        name: facts
        for name, facts in reservations_in_region(every_reservation, region).items()
        if name in blocks
    }
    zones = cluster_zone_names(settings, known_zones)
    pools = []
    for index, plan in enumerate(plans):
        findings = check_pool_on_cluster(plan, plans[:index])
        findings += check_pool_target(plan, minor, region)
        findings += check_reservation_region(plan, every_reservation, settings.account, region)
        if plan.name in looked_up:
            findings += check_reservation_facts(plan, looked_up[plan.name])
            findings += check_ultraserver_block(plan, looked_up[plan.name])
        if region_facts is not None:
            findings += check_pool_region(
                plan, region_facts, zones, minor, existing=settings.cluster.existing is not None
            )
        pools.append(findings)
    app = check_app(settings, today=today) + check_zones_known(settings, known_zones)
    if region_facts is not None:
        app += check_vcpu_quotas(plans, region_facts)
    app += check_cluster(settings, known_zones)
    app += check_existing_cluster(settings, cluster_facts)
    app += check_reservation_zones(settings, looked_up, known_zones)
    app += check_metrics(settings.metrics, plans)
    app += check_agent_installed(settings, plans)
    for plan in plans:
        app += check_karpenter_features(plan, settings.karpenter.chart_version)
        app += check_karpenter_dra_version(plan, settings.karpenter.chart_version)
        app += check_efa_on_existing_cluster(plan, settings.cluster.existing is not None)
    for selector, setting, used in (
        (settings.autoscaler.node_selector, "autoscaler", uses_autoscaler(settings)),
        (settings.karpenter.node_selector, "karpenter", uses_karpenter(settings)),
    ):
        if used:
            app += check_node_selector(selector, plans, setting)
    return SettingsFindings(pools, app)
