"""The state of one `gpu-pool verify` run (verifier.py beside this): its stages, its
timeouts, its clock, what it has seen so far, and the failure it ends in."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

STAGES = ("pending", "scale-up", "node joined", "node ready", "gpu allocatable", "scheduled")
DRA_STAGES = (
    "pending",
    "scale-up",
    "node joined",
    "node ready",
    "driver running",
    "devices published",
    "claim allocated",
    "scheduled",
)
# What an UltraServer pod prints once it saw its IMEX channel (smoke_test.IMEX_CHECK).
IMEX_CHANNEL_SEEN = "imex-channel: channel0"


@dataclass(frozen=True)
class Timeouts:
    """Seconds each wait may take before verify classifies the stall."""

    scale_up: float = 180
    node_join: float = 600
    node_ready: float = 300
    gpu: float = 300
    run: float = 900
    poll: float = 5


class SystemClock:
    """Real time: monotonic, so a clock change does not fake or hide a stall."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class Failure(Exception):
    cause: str
    evidence: list[str]
    fix: str
    # The stage it stalled before, where the order of stages reached does not say it (the
    # driver's stages on a node that was there before the pod).
    stage: str = ""


@dataclass
class Run:
    """What has been seen so far, and when."""

    started: float
    reached: dict[str, float] = field(default_factory=dict)
    # Nodes and (Karpenter) NodeClaims of the pool from before the pod: not its scale-up.
    known_nodes: set[str] = field(default_factory=set)
    known_claims: set[str] = field(default_factory=set)
    # The pod's new node once it joined ("node joined" is reached then).
    node: dict[str, Any] | None = None
    scale_up_message: str = ""
    # Karpenter pools: the NodeClaim made for the pod.
    node_claim: dict[str, Any] | None = None
    # UltraServer pools: the ComputeDomain's nodes seen Ready, by name (status.nodes entries).
    imex_nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
