"""The rules about training pools: reserved capacity (ODCRs, Capacity Blocks for ML) and EFA.

Sources: EKS UG ml/capacity-blocks-mng (one instance type, the block's zone only, capacity type
CAPACITY_BLOCK, desired 0 before the block starts), ml/node-efa (one zone, a cluster placement
group), EC2 CapacityReservationSpecification (capacity-reservations-only never launches Spot),
EC2 UG "Launch instances into an existing Capacity Reservation" (a launch targeting a full
reservation fails; one targeting a group runs On-Demand unless capacity-reservations-only),
Karpenter v1.14.1 tasks/odcrs.md (selection by id or tags, no open matching).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.versions import (
    EXACT_VERSION,
    KARPENTER,
    KARPENTER_PLACEMENT_GROUP_SINCE,
    KARPENTER_RESERVED_CAPACITY_SINCE,
    version_key,
)
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.settings.pool import CapacityReservationSettings


def check_training(plan: PoolPlan) -> Iterator[Finding]:
    """Every rule about a pool's reserved capacity and EFA on its own."""
    yield from _check_efa(plan)
    reservation = plan.settings.capacity_reservation
    if reservation is None:
        return
    if reservation.capacity_block:
        yield from _check_capacity_block(plan)
    else:
        yield from _check_odcr(plan, reservation)


def _types(plan: PoolPlan) -> list[str]:
    return [t.name for group in plan.entries for t in group]


def _check_efa(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix = plan.settings, plan.setting
    if not pool.efa:
        return
    without = [t.name for group in plan.entries for t in group if t.efa_interfaces == 0]
    if without:
        yield error(
            "GP-TRAIN-01",
            f"{prefix}.efa",
            f"true, but {', '.join(without)} {'has' if len(without) == 1 else 'have'} no EFA "
            "(EC2 MaximumEfaInterfaces 0): choose an EFA type such as p5.48xlarge, p4d.24xlarge "
            "or g6e.48xlarge, or set efa: false",
        )
    counts = {t.name: t.efa_interfaces for group in plan.entries for t in group}
    if not without and len(set(counts.values())) > 1:
        listed = ", ".join(f"{name}: {count}" for name, count in counts.items())
        yield error(
            "GP-TRAIN-02",
            f"{prefix}.instance_types",
            f"EFA interface counts differ ({listed}); the pool's launch template has one "
            "interface per network card of one type: list types with the same count",
        )
    if len(pool.zones) != 1:
        yield error(
            "GP-TRAIN-03",
            f"{prefix}.zones",
            f"{_zones(pool.zones)} with efa: EFA nodes talk over one cluster placement group, "
            "which lives in one zone: list exactly one zone",
        )


def _check_capacity_block(plan: PoolPlan) -> Iterator[Finding]:
    pool, prefix = plan.settings, plan.setting
    setting = f"{prefix}.capacity_reservation"
    types = _types(plan)
    if len(types) > 1:
        yield error(
            "GP-TRAIN-04",
            f"{prefix}.instance_types",
            f"{len(types)} types ({', '.join(types)}) with a capacity-block: a block is one "
            "instance type, and its launch template names exactly that one: list only it",
        )
    if len(pool.zones) != 1:
        yield error(
            "GP-TRAIN-05",
            f"{prefix}.zones",
            f"{_zones(pool.zones)} with a capacity-block: a block lives in one zone and its "
            "node groups may only use that zone's subnets: list exactly the block's zone",
        )
    if pool.min_size > 0:
        yield error(
            "GP-TRAIN-06",
            f"{prefix}.min_size",
            f"{pool.min_size} with a capacity-block: before the block starts every launch fails, "
            "and EKS scales the group to 0 before it ends: set 0 and let the autoscaler scale up",
        )
    if pool.desired_size > 0:
        yield error(
            "GP-TRAIN-07",
            f"{prefix}.desired_size",
            f"{pool.desired_size} with a capacity-block: a desired size before the block starts "
            "gives launch errors until it does: set 0",
        )
    for group in plan.entries:
        for gpu_type in group:
            if not gpu_type.family.ec2_counts_gpus:
                yield error(
                    "GP-TRAIN-08",
                    f"{prefix}.instance_types",
                    f"'{gpu_type.name}' ({gpu_type.family.note}) is not sold as Capacity Blocks "
                    "for ML: blocks are whole-GPU types such as p5.48xlarge",
                )
    if pool.capacity_type == "SPOT":
        yield error(
            "GP-TRAIN-09",
            f"{prefix}.capacity_type",
            f"SPOT with {setting}.type capacity-block: a block's instances are reserved, never "
            "Spot: set ON_DEMAND (the node group's capacity type becomes CAPACITY_BLOCK)",
        )


def _check_odcr(plan: PoolPlan, reservation: CapacityReservationSettings) -> Iterator[Finding]:
    pool, prefix = plan.settings, plan.setting
    setting = f"{prefix}.capacity_reservation"
    if pool.capacity_type == "SPOT":
        yield error(
            "GP-TRAIN-10",
            f"{prefix}.capacity_type",
            f"SPOT with {setting}.type odcr: reservations hold on-demand capacity and a Spot "
            "launch never uses them: set ON_DEMAND, or drop capacity_reservation",
        )
    if reservation.preference == "capacity-reservations-only" and reservation.fallback != "none":
        yield error(
            "GP-TRAIN-11",
            f"{setting}.fallback",
            "on-demand with preference capacity-reservations-only, which never launches "
            "outside a reservation: set fallback: none, or preference: open",
        )
    if reservation.placement_group is not None and len(pool.zones) != 1 and not pool.efa:
        # An EFA pool's zones are GP-TRAIN-03's.
        yield error(
            "GP-TRAIN-19",
            f"{prefix}.zones",
            f"{_zones(pool.zones)} with {setting}.placement_group: a cluster placement group "
            "lives in one zone and launches into it elsewhere fail: list exactly the group's "
            "zone",
        )
    if plan.karpenter is not None:
        if reservation.id is None:
            given = "resource_group_arn" if reservation.resource_group_arn else "preference"
            yield error(
                "GP-TRAIN-12",
                f"{setting}.{given}",
                "Karpenter has no open matching and no resource groups (it selects reservations "
                "by id): name the reservation's id, or use provisioner: cluster-autoscaler",
            )
    elif reservation.fallback == "on-demand" and reservation.id is not None:
        yield error(
            "GP-TRAIN-13",
            f"{setting}.fallback",
            f"on-demand on node groups that target reservation {reservation.id}: EC2 fails a "
            "launch into a full reservation and never runs it On-Demand; add a second, on-demand "
            "pool for the workload (the priority expander ranks the reserved groups first), or "
            "name the reservation's resource group (resource_group_arn), or use preference: open",
        )


def check_karpenter_features(plan: PoolPlan, chart_version: str | None) -> Iterator[Finding]:
    """A reserved or EFA Karpenter pool against the Karpenter version that will run it."""
    version = chart_version or KARPENTER.version
    if plan.karpenter is None or not EXACT_VERSION.match(version):
        return
    needs = []
    if plan.settings.capacity_reservation is not None:
        needs.append(
            ("capacity_reservation", KARPENTER_RESERVED_CAPACITY_SINCE, "reserved capacity")
        )
    if plan.capacity.own_placement_group:
        needs.append(
            ("efa", KARPENTER_PLACEMENT_GROUP_SINCE, "EC2NodeClass placementGroupSelector")
        )
    elif plan.capacity.reservation_placement_group is not None:
        needs.append(
            (
                "capacity_reservation.placement_group",
                KARPENTER_PLACEMENT_GROUP_SINCE,
                "EC2NodeClass placementGroupSelector",
            )
        )
    for setting, since, feature in needs:
        if version_key(version) < version_key(since):
            yield error(
                "GP-TRAIN-14",
                f"{plan.setting}.{setting}",
                f"Karpenter {version} has no {feature} (it came in {since}): set "
                f"karpenter.chart_version to {since} or newer (the pin is {KARPENTER.version}), "
                "or use provisioner: cluster-autoscaler",
            )


def check_reservation_facts(plan: PoolPlan, facts: ReservationFacts) -> Iterator[Finding]:
    """The pool's stated zone, type and size against its Capacity Block as EC2 describes it
    (looked up once and cached in cdk.context.json)."""
    pool, prefix = plan.settings, plan.setting
    source = f"reservation {facts.reservation_id} (cdk.context.json)"
    if pool.zones and pool.zones != [facts.zone]:
        yield error(
            "GP-TRAIN-15",
            f"{prefix}.zones",
            f"{', '.join(pool.zones)}, but {source} is in {facts.zone}: list [{facts.zone}]",
        )
    types = [t.name for group in plan.entries for t in group]
    if types and types != [facts.instance_type]:
        yield error(
            "GP-TRAIN-16",
            f"{prefix}.instance_types",
            f"{', '.join(types)}, but {source} holds {facts.instance_type}: list "
            f"[{facts.instance_type}]",
        )
    if pool.max_size > facts.count:
        yield warning(
            "GP-TRAIN-17",
            f"{prefix}.max_size",
            f"{pool.max_size}, but {source} holds {facts.count} instances: launches beyond "
            f"them fail; set {facts.count}",
        )


def check_efa_on_existing_cluster(plan: PoolPlan, existing: bool) -> Iterator[Finding]:
    """The app makes an EFA pool's security group in the cluster's VPC, which it knows only for
    the cluster it creates (cluster.existing names no VPC)."""
    if existing and plan.settings.efa:
        yield error(
            "GP-TRAIN-18",
            f"{plan.setting}.efa",
            "true on cluster.existing: the app knows no VPC there for the EFA security group; "
            "use the GpuNodePool or KarpenterNodePool construct with `vpc` and "
            "`cluster_security_group_id`, or a cluster the app creates",
        )


def _zones(zones: list[str]) -> str:
    return f"{len(zones)} zones ({', '.join(zones)})" if zones else "no zone (every subnet's)"
