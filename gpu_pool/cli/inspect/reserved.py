"""Training pools on a running cluster: whether a pool's reservation can take launches now, and
whether an EFA pool's nodes advertise their EFA interfaces.

A reservation is read with EC2 DescribeCapacityReservations (its State, StartDate, EndDate and
instance counts). A Capacity Block is `scheduled` (or `payment-pending`) until it starts, then
`active`, then `expired`; every launch before or after fails, which Cluster Autoscaler only
reports as a failed scale-up (EC2 API reference, CapacityReservation).
"""

from __future__ import annotations

from typing import Any

from gpu_pool.cli.inspect.cluster import Verdict
from gpu_pool.plan.node_template import EFA_RESOURCE
from gpu_pool.plan.record import PoolRecord

NOT_STARTED = frozenset({"scheduled", "payment-pending", "pending", "assessing", "delayed"})
ENDED = frozenset({"expired", "cancelled", "failed", "payment-failed", "unsupported"})


def reservation_verdict(ec2: Any, pool: PoolRecord) -> Verdict | None:
    """The pool's reservation, by id, as EC2 sees it now; None when the pool names none (no
    reservation, or an ODCR by preference or resource group)."""
    reservation = pool.reservation_id
    if reservation is None:
        return None
    subject = f"pool {pool.name} reservation {reservation}"
    found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation])
    (current,) = found["CapacityReservations"]
    state = current["State"]
    if state == "active":
        available, total = current["AvailableInstanceCount"], current["TotalInstanceCount"]
        ends = f", ends {current['EndDate']:%Y-%m-%d %H:%M} UTC" if current.get("EndDate") else ""
        return Verdict("ok", subject, f"active, {available} of {total} instances free{ends}")
    if state in NOT_STARTED:
        starts = current.get("StartDate")
        when = f"starts {starts:%Y-%m-%d %H:%M} UTC" if starts else "not started"
        return Verdict(
            "warn",
            subject,
            f"{state}: {when}; until then every launch fails and the pool gets no node",
            "wait for the start (the autoscaler retries, or falls back to a lower-priority "
            "pool), or run the job on an on-demand pool",
        )
    if state in ENDED:
        end = current.get("EndDate")
        when = f" on {end:%Y-%m-%d %H:%M} UTC" if end else ""
        return Verdict(
            "fail",
            subject,
            f"{state}{when}: the pool can launch no node into it",
            "set pool.capacity_reservation.id to a current reservation, or remove "
            "capacity_reservation",
        )
    return Verdict("warn", subject, f"state {state}", "aws ec2 describe-capacity-reservations")


def efa_verdict(node: dict[str, Any], pool: PoolRecord) -> Verdict | None:
    """An EFA pool's node must advertise one vpc.amazonaws.com/efa per network card (the EFA
    device plugin registers them); None for pools without EFA."""
    if not pool.efa_interfaces:
        return None
    name = node["metadata"]["name"]
    value = ((node.get("status") or {}).get("allocatable") or {}).get(EFA_RESOURCE, "0")
    expected = pool.efa_interfaces
    if value == str(expected):
        return Verdict("ok", f"node {name}", f"{EFA_RESOURCE}: {value}")
    return Verdict(
        "fail",
        f"node {name}",
        f"{EFA_RESOURCE}: {value}, expected {expected} (one per network card)",
        f"the EFA device plugin: kubectl -n kube-system get pods -o wide | grep "
        f"aws-efa-k8s-device-plugin-{pool.name}; and the launch template's network interfaces",
    )
