"""A pool's node repair: whether the nodes the EKS node monitoring agent finds unhealthy are
repaired, and, on node groups, how (docs/gpu-health.md).

The names follow EKS's NodeRepairConfig (CloudFormation AWS::EKS::Nodegroup), whose count and
percentage of each pair are mutually exclusive ("you cannot also set ... at the same time"):
a pair set twice is refused here, naming the setting.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpu_pool.settings.base import _Settings

# The agent's conditions (model/node_health.py AGENT_CONDITIONS; a test holds the two equal).
AgentCondition = Literal[
    "AcceleratedHardwareReady",
    "ContainerRuntimeReady",
    "KernelReady",
    "NetworkingReady",
    "StorageReady",
]


class RepairOverride(_Settings):
    """What repair does, and after how long, for one condition and reason the agent reports
    (EKS NodeRepairConfigOverrides: all four values required)."""

    condition: AgentCondition = "AcceleratedHardwareReady"
    """The agent's node condition the reason is reported on."""
    reason: str = Field(pattern=r"^[A-Za-z0-9]+$", min_length=1)
    """The condition's reason as the agent sets it, e.g. NvidiaXID79Error
    (docs/gpu-health.md lists them)."""
    wait_minutes: int = Field(ge=1)
    """Minutes the condition stays False with this reason before repair acts."""
    action: Literal["Replace", "Reboot", "NoAction"]
    """Replace (a new instance), Reboot (the same instance) or NoAction (model/node_health.py
    RepairAction)."""


class RepairSettings(_Settings):
    """Node repair (docs/gpu-health.md). On by default: a GPU the agent reports broken would
    otherwise keep failing the jobs that land on it until someone notices. The limits and
    overrides apply to node group pools; Karpenter and Auto Mode have their own (unset here:
    gpu-pool's defaults, which the docs list with their sources)."""

    enabled: bool = True
    """Repair the pool's unhealthy nodes. Auto Mode always does and cannot be told otherwise."""
    max_unhealthy_count: int | None = Field(default=None, ge=1)
    """Node groups: repair stops while more than this many nodes are unhealthy (a systemic
    fault must not replace the whole pool). Not with max_unhealthy_percentage."""
    max_unhealthy_percentage: int | None = Field(default=None, ge=1, le=100)
    """Node groups: the same limit as a percentage of the node group; both unset: 20."""
    max_parallel_count: int | None = Field(default=None, ge=1)
    """Node groups: nodes repaired at once; both unset: 1. Not with max_parallel_percentage."""
    max_parallel_percentage: int | None = Field(default=None, ge=1, le=100)
    """Node groups: the same bound as a percentage of the unhealthy nodes."""
    overrides: list[RepairOverride] | None = None
    """Node groups: the action and wait per condition and reason; None: gpu-pool's (reboot
    where EKS reboots, and for UltraServer fabric faults), []: EKS's defaults alone."""

    @model_validator(mode="after")
    def _one_of_each_pair(self) -> RepairSettings:
        # Each message starts with a field name: the parent prefixes this model's path.
        for limit in ("max_unhealthy", "max_parallel"):
            count, percentage = f"{limit}_count", f"{limit}_percentage"
            if getattr(self, count) is not None and getattr(self, percentage) is not None:
                raise ValueError(
                    f"{percentage}: set with {count}; EKS's NodeRepairConfig takes one of the "
                    "two, not both: keep one"
                )
        return self
