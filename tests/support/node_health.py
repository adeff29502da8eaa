"""Node conditions as the EKS node monitoring agent sets them, with reasons taken from its own
published list (tests/fixtures/node-monitoring-agent-reasons-1.7.0/reasons.yaml)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import yaml

from tests.support.paths import FIXTURES

REASONS = yaml.safe_load(
    (FIXTURES / "node-monitoring-agent-reasons-1.7.0" / "reasons.yaml").read_text()
)
# The reason and message of a healthy AcceleratedHardwareReady on an NVIDIA node
# (aws/eks-node-monitoring-agent v1.7.0 cmd/eks-node-monitoring-agent/main.go:312).
GPU_READY = ("NvidiaGPUIsReady", "Monitoring for the Nvidia GPU system is active")


def agent_reason(condition: str, name: str, *args: object) -> str:
    """The reason the agent gives for its list's entry `name` under `condition` (a KeyError
    if the list has no such entry): its template filled with `args` (an XID code)."""
    return str(REASONS[condition][name]["Template"] % args)


def agent_condition(type_, status, reason, message="", minutes=0.0) -> dict:
    """A node condition the agent set `minutes` ago (its lastTransitionTime; half a minute
    more, so that whole minutes read the same however long the test takes)."""
    since = datetime.now(UTC) - timedelta(minutes=minutes, seconds=30)
    found = {
        "type": type_,
        "status": status,
        "reason": reason,
        "lastHeartbeatTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if message:
        found["message"] = message
    return found
