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
# The tests' now: conditions are dated against it, and tests/cli/conftest.py pins the
# command's clock (gpu_pool.cli.inspect.health.utc_now) to it, so that an age reads the same
# however late a test runs after collection.
NOW = datetime.now(UTC).replace(microsecond=0)


def agent_reason(condition: str, name: str, *args: object) -> str:
    """The reason the agent gives for its list's entry `name` under `condition` (a KeyError
    if the list has no such entry): its template filled with `args` (an XID code)."""
    return str(REASONS[condition][name]["Template"] % args)


def agent_condition(type_, status, reason, message="", minutes=0.0) -> dict:
    """A node condition the agent set `minutes` (and half a minute) before NOW."""
    since = NOW - timedelta(minutes=minutes, seconds=30)
    found = {
        "type": type_,
        "status": status,
        "reason": reason,
        "lastHeartbeatTime": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if message:
        found["message"] = message
    return found
