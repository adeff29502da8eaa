"""`gpu-pool plan`: what the pools build, per cluster and pool, as a table or JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from gpu_pool.model.prices import PRICE_REGION, PRICE_SOURCE
from gpu_pool.model.quotas import read_command
from gpu_pool.plan.summary import PoolSummary

UNKNOWN = "unknown"


def plan_json(
    summaries: Sequence[PoolSummary], warnings: Sequence[str] = (), notes: Sequence[str] = ()
) -> dict[str, Any]:
    """The summaries as one JSON object: `pools` (one per pool), the prices' source, the
    synth's `warnings` about the settings, and the `notes` the table prints below them (an
    existing cluster looked up, or not yet)."""
    return {
        "pools": [dataclasses.asdict(s) for s in summaries],
        "prices": PRICE_SOURCE,
        "warnings": list(warnings),
        "notes": list(notes),
    }


def plan_table(summaries: Sequence[PoolSummary], warnings: Sequence[str] = ()) -> str:
    """A block per cluster, a row per figure of each of its pools, and the prices' source. A
    cluster in another region than the price table's says so in its heading. Then the synth's
    `warnings` about the settings, a line each."""
    lines: list[str] = []
    clusters = dict.fromkeys((s.cluster, s.region) for s in summaries)
    for cluster, region in clusters:
        name = cluster or "(named by EKS at deploy)"
        header = f"Cluster {name}, region {region or 'of the deploy environment'}"
        if region not in (None, PRICE_REGION):
            header += f" (its prices below are {PRICE_REGION}'s)"
        lines.append(header)
        for summary in (s for s in summaries if (s.cluster, s.region) == (cluster, region)):
            lines.append(f"  Pool {summary.pool}")
            lines += [f"    {label:<18}{value}" for label, value in _rows(summary)]
    lines.append(f"Prices: {PRICE_SOURCE}; {UNKNOWN}: a type the table has no price for.")
    lines += [f"Warning: {warning}" for warning in warnings]
    return "\n".join(lines)


def _rows(summary: PoolSummary) -> list[tuple[str, str]]:
    # The DeviceClasses a DRA pool's pods claim its devices by; no row for other pools.
    dra = [("DRA devices", "; ".join(summary.device_classes))] if summary.device_classes else []
    rows = [
        ("provisioner", summary.provisioner),
        ("launched by", "; ".join(summary.launched_by)),
        (
            "per node",
            "; ".join(
                f"{n.instance_type}: {_count(n.gpus, 'GPU')}"
                + (f" ({_advertised(n.advertises)})" if summary.sharing else "")
                for n in summary.nodes
            ),
        ),
        ("zones", ", ".join(summary.zones) or "every zone of the cluster's subnets"),
        ("nodes", _nodes(summary)),
        ("max GPUs", _known(summary.max_gpus)),
        ("GPU sharing", summary.sharing or "none (whole GPUs)"),
        ("reservation", summary.reservation or "none"),
        (
            "EFA",
            f"{summary.efa_interfaces} interfaces per node" if summary.efa_interfaces else "no",
        ),
        ("device software", _software(summary)),
        *dra,
        ("pods tolerate", ", ".join(summary.tolerations) or "nothing (no taints)"),
        ("repair", summary.repair or f"{UNKNOWN} (the record predates repair)"),
        ("vCPUs at max", _quotas(summary)),
        ("on-demand at max", _cost(summary)),
    ]
    return rows


def _quotas(summary: PoolSummary) -> str:
    """Per EC2 vCPU quota: the pool's vCPUs at max size, against the quota's value where the
    cached lookup has it (else the command that reads it)."""
    if not summary.vcpu_quotas:
        return "none counted (a Capacity Block's instances, or sizes the record lacks)"
    rows = []
    for need in summary.vcpu_quotas:
        if need.value is not None:
            over = " (over it: launches past it fail)" if need.vcpus_at_max > need.value else ""
            known = f"quota {need.value:g}{over}"
        else:
            known = f"read the quota with: {read_command(need.code, summary.region or 'REGION')}"
        rows.append(f"{need.vcpus_at_max} of {need.name} ({need.code}; {known})")
    return "; ".join(rows)


def _software(summary: PoolSummary) -> str:
    """gpu_software, and who brings the device plugin when gpu-pool installs none."""
    if summary.gpu_software != "none":
        return summary.gpu_software
    if summary.provisioner == "auto-mode":
        return "EKS Auto Mode's (its nodes come with the NVIDIA driver and device plugin)"
    return "none installed by gpu-pool (Bottlerocket's own device plugin, or yours)"


def _nodes(summary: PoolSummary) -> str:
    if summary.max_size is None:
        return f"{UNKNOWN} (the record predates sizes: synthesize with this gpu-pool)"
    if summary.provisioner != "cluster-autoscaler":
        return f"max {summary.max_size} (NodePool limit)"
    text = f"min {summary.min_size}, max {summary.max_size} (per node group)"
    if summary.max_nodes != summary.max_size:
        text += f", {summary.max_nodes} in all"
    return text


def _cost(summary: PoolSummary) -> str:
    cost = summary.usd_per_hour_at_max
    text = UNKNOWN if cost is None else f"${cost:,.2f}/hour"
    if summary.billing_note:
        text += f"; {summary.billing_note}"
    return text


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _advertised(resources: dict[str, int] | Any) -> str:
    return ", ".join(f"{n} {resource}" for resource, n in resources.items())


def _known(value: int | None) -> str:
    return UNKNOWN if value is None else str(value)
