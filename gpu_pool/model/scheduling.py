"""The part of kube-scheduler's filtering that decides whether a pod may land on a node.

Implements NodeSelector, required node affinity (nodeSelectorTerms are ORed, the expressions in a
term ANDed) and taint toleration, as the Kubernetes API reference defines them, and the part of
required pod affinity a node decides alone: it must carry every term's topologyKey. Used to prove
at synth time that the device plugin's DaemonSet will run on the pool's nodes, and that the smoke
test's pods can.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expr["key"], expr["operator"]
    values = expr.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        if key not in labels:
            return False
        try:
            actual, bound = int(labels[key]), int(values[0])
        except (ValueError, IndexError):
            return False
        return actual > bound if operator == "Gt" else actual < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def node_affinity_matches(affinity: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Required node affinity: true when absent, else any term whose expressions all match."""
    required = ((affinity or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    return any(
        all(_expression_matches(e, labels) for e in term.get("matchExpressions") or [])
        for term in terms
    )


def pod_affinity_topology_present(
    affinity: Mapping[str, Any] | None, labels: Mapping[str, str]
) -> bool:
    """Whether the node carries the topologyKey of every required pod affinity term: a node
    without one fails the term whatever pods run (kube-scheduler's InterPodAffinity filter,
    kubernetes/kubernetes pkg/scheduler/framework/plugins/interpodaffinity/filtering.go
    satisfyPodAffinity: "All topology labels must exist on the node"). Anti-affinity terms
    never fail for a missing key."""
    terms = ((affinity or {}).get("podAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    return all(term["topologyKey"] in labels for term in terms)


def node_selector_matches(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def toleration_tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    """One toleration against one taint (effect in Kubernetes spelling)."""
    effect = toleration.get("effect")
    if effect and effect != taint["effect"]:
        return False
    key = toleration.get("key")
    if toleration.get("operator") == "Exists":
        return not key or key == taint["key"]
    # Equal, the default operator: an absent value is the empty one.
    return key == taint["key"] and toleration.get("value", "") == taint.get("value", "")


def untolerated_taints(
    tolerations: Sequence[Mapping[str, Any]] | None, taints: Sequence[Mapping[str, str]]
) -> list[Mapping[str, str]]:
    """The NoSchedule/NoExecute taints no toleration covers (PreferNoSchedule never blocks)."""
    return [
        t
        for t in taints
        if t["effect"] != "PreferNoSchedule"
        and not any(toleration_tolerates(tol, t) for tol in tolerations or [])
    ]


def pod_fits_node(
    pod_spec: Mapping[str, Any],
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, str]],
) -> bool:
    """Whether a pod spec's selection and tolerations admit a node with these labels/taints."""
    return (
        node_selector_matches(pod_spec.get("nodeSelector"), labels)
        and node_affinity_matches(pod_spec.get("affinity"), labels)
        and pod_affinity_topology_present(pod_spec.get("affinity"), labels)
        and not untolerated_taints(pod_spec.get("tolerations"), taints)
    )
