"""The settings document: the app's configuration (`AppSettings`, the `gpu-pool` key of cdk.json
with a config file merged over it), made of the sections of pool.py, cluster.py and
controllers.py; and the warnings it accepts (`acknowledge`).

Field types, ranges and unknown keys are checked in the sections, where the settings enter;
rules that span several settings, or need the GPU catalog, live in gpu_pool/checks/.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from gpu_pool.model.findings import RULE_ID
from gpu_pool.model.rule_levels import rule_levels
from gpu_pool.settings.base import _Settings
from gpu_pool.settings.cluster import ClusterSettings
from gpu_pool.settings.controllers import AutoscalerSettings, KarpenterSettings, MetricsSettings
from gpu_pool.settings.errors import matching
from gpu_pool.settings.field_types import ACCOUNT_ID, REGION_NAME, STACK_NAME, PoolName
from gpu_pool.settings.pool import PoolSettings


def _a_warning(rule: str) -> str:
    """A rule id the app may acknowledge: a gpu-pool rule whose level is warning. Checked on each
    key, so pydantic reports it with every other key's and reason's problem, one line each."""
    level = rule_levels().get(rule)
    if level is None:
        raise ValueError(
            "not a gpu-pool rule; acknowledge a warning by the id the synth prints after it "
            "([ack: gpu-pool:GP-...]; docs/guardrails.md lists them)"
        )
    if level == "error":
        raise ValueError(
            "an error, which cannot be acknowledged (the deploy would not work): change the "
            "setting it names instead"
        )
    return rule


# A warning the app accepts, by its rule id (docs/guardrails.md), and why.
RuleId = Annotated[
    str, matching(RULE_ID.pattern, "a rule id such as GP-POOL-26"), AfterValidator(_a_warning)
]
Reason = Annotated[
    str, matching(r"\S", "a reason: why this app accepts the warning (for the next reader)")
]


class AppSettings(_Settings):
    """Everything the app deploys: one file per account/region/cluster."""

    stack_name: str = matching(
        *STACK_NAME,
        default="GpuPool",
    )
    """The CloudFormation stack's name."""
    account: str | None = matching(*ACCOUNT_ID, default=None)
    """Both unset: an environment-agnostic stack (synthesizes without AWS credentials)."""
    region: str | None = matching(*REGION_NAME, default=None)
    """The stack's region; with account, an environment-bound stack (needed for zones)."""
    cluster: ClusterSettings = ClusterSettings()
    """The EKS cluster: created by the app unless cluster.existing is set."""
    pool: PoolSettings | None = None
    """One pool (the original form), or `pools`: pool name -> its settings. Neither: one default
    pool named `gpu`."""
    pools: dict[PoolName, PoolSettings] | None = None
    """Several pools: pool name -> its settings (the key is the name). Not with `pool`."""
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    """Cluster Autoscaler, installed when a pool uses it."""
    karpenter: KarpenterSettings = KarpenterSettings()
    """The Karpenter installation, made when a pool uses it."""
    metrics: MetricsSettings = MetricsSettings()
    """GPU metrics: none (default), dcgm-exporter or cloudwatch."""
    acknowledge: dict[RuleId, Reason] = Field(default_factory=dict)
    """Warnings the app accepts: rule id -> why, e.g. {GP-POOL-26: a warm node for demos}.
    The stack's warnings of that rule are acknowledged with the reason (the CDK's
    acknowledge_warning), so a synth no longer prints them. Warnings only: an error means the
    deploy would not work."""

    @field_validator("pools", mode="before")
    @classmethod
    def _some_pools(cls, value: object) -> object:
        if value == {}:
            raise ValueError(
                "is empty: name at least one pool (name: its settings), or remove `pools` for "
                "the one default pool"
            )
        return value

    @model_validator(mode="after")
    def _one_form_of_pools(self) -> AppSettings:
        if self.pool is not None and self.pools is not None:
            raise ValueError(
                "pool and pools are both set; use `pool` for one pool or `pools` "
                "(name -> settings) for several, not both"
            )
        for name, pool in (self.pools or {}).items():
            if "name" in pool.model_fields_set and pool.name != name:
                raise ValueError(
                    f"pools.{name}.name: '{pool.name}' differs from its key '{name}'; in `pools` "
                    "the key is the name: drop `name`"
                )
        return self

    def pool_settings(self) -> list[tuple[str, PoolSettings]]:
        """Each pool with the setting path its messages name (`pool` or `pools.<name>`)."""
        if self.pools is None:
            return [("pool", self.pool or PoolSettings())]
        return [
            (f"pools.{name}", pool.model_copy(update={"name": name}))
            for name, pool in self.pools.items()
        ]
