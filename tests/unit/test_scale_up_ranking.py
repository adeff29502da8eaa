"""The Cluster Autoscaler priority expander's order: fewer GPUs per node first, then the family
cheaper per GPU-hour (model/prices.py). The per-GPU price is derived from the price table
(#29 review item 3: it was a hand copy in the catalog); the order must not change with that."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpu_pool.cdk.autoscaling.autoscaler import CATCH_ALL_PRIORITY, scale_up_priorities
from gpu_pool.model import catalog
from gpu_pool.model.prices import ON_DEMAND_USD_PER_HOUR, usd_per_gpu_hour
from gpu_pool.plan.node_group import NodeGroupPlan
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import AppSettings
from tests.support import settings as synth


@dataclass(frozen=True)
class _Placed:
    """What scale_up_priorities reads of a placed node group: its plan and its ASG's name
    (here the group's setting and zone, which name it as uniquely)."""

    plan: NodeGroupPlan

    @property
    def asg_name(self) -> str:
        return f"{self.plan.setting}@{self.plan.zone}"


def _priorities(settings: dict) -> dict[str, list[str]]:
    plans = plan_pools(AppSettings.model_validate(settings))
    groups = [_Placed(g) for p in plans for g in p.node_groups]
    priorities = scale_up_priorities(groups)  # type: ignore[arg-type]
    return {
        rank: [name.strip("^$") for name in names]
        for rank, names in priorities.items()
        if rank not in CATCH_ALL_PRIORITY
    }


def _groups(*entries: str, zones: tuple[str | None, ...] = (None,)) -> list[str]:
    return [f"{entry}@{zone}" for entry in entries for zone in zones]


# Every synthesized app's groups by priority (the higher, the sooner Cluster Autoscaler picks
# it), as main rendered them before the price moved: reserved groups first, then fewer GPUs per
# node (g5g, g5, g6 before g6e.12xlarge's 4 before the 8-GPU types), then the family cheaper
# per GPU-hour (g5g before g5, g6 before g5 before g6e, p5 before p6-b200).
EXPECTED = {
    "multi": {
        "50": _groups("pool.instance_types[4]", zones=("us-east-1a", "us-east-1b")),  # g5g
        "40": _groups("pool.instance_types[0]", zones=("us-east-1a", "us-east-1b")),  # g5
        "30": _groups("pool.instance_types[1]", zones=("us-east-1a", "us-east-1b")),  # g6e.12xl
        "20": _groups("pool.instance_types[2]", zones=("us-east-1a", "us-east-1b")),  # p5
        "10": _groups("pool.instance_types[3]", zones=("us-east-1a", "us-east-1b")),  # p6-b200
    },
    "three-pools": {
        "40": _groups("pools.spot.instance_types[0]"),  # g6
        "30": _groups("pools.inference.instance_types[1]"),  # g5
        "20": _groups("pools.inference.instance_types[0]"),  # g6e
        "10": _groups("pools.training.instance_types[0]"),  # p5
    },
    "training": {
        "30": _groups("pools.odcr.instance_types[0]"),  # reserved g6e.12xlarge
        "20": _groups("pools.train.instance_types[0]", zones=("us-east-1a",)),  # reserved p5
        "10": _groups("pools.train-od.instance_types[0]", zones=("us-east-1a",)),  # p5
    },
    "dra": {
        "20": _groups("pools.plugin.instance_types[0]"),  # g6
        "10": _groups("pools.dra.instance_types[0]"),  # g6e
    },
}


@pytest.mark.parametrize("name", synth.NAMED_SETTINGS)
def test_the_priority_expander_order_of_the_synth_settings(name):
    """Apps with one Cluster Autoscaler group or none have no order to keep."""
    priorities = _priorities(synth.NAMED_SETTINGS[name])
    assert priorities == EXPECTED.get(name, priorities if len(priorities) < 2 else {})


def test_families_rank_by_their_cheapest_sizes_price_per_gpu():
    """Every family the catalog resolves, cheapest per GPU-hour first; p5e (no on-demand price:
    Capacity Blocks) as p5en, the same H200; p6e-gb200 (UltraServer Capacity Blocks only, no
    on-demand price and no twin) last."""
    usable = [f for f in catalog.GPU_FAMILIES.values() if f.min_driver <= catalog.AMI_DRIVER_BRANCH]
    ranked = sorted(usable, key=lambda f: (usd_per_gpu_hour(f), f.family))
    assert [f.family for f in ranked] == [
        "g6f", "g5g", "g4dn", "g6", "g5", "gr6f", "gr6", "g6e", "p4d", "p3", "g7e", "p4de",
        "p3dn", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200",
    ]  # fmt: skip
    assert usd_per_gpu_hour(catalog.GPU_FAMILIES["p4d"]) == ON_DEMAND_USD_PER_HOUR["p4d.24xlarge"] / 8
    assert usd_per_gpu_hour(catalog.GPU_FAMILIES["g4dn"]) == ON_DEMAND_USD_PER_HOUR["g4dn.xlarge"]
    assert usd_per_gpu_hour(catalog.GPU_FAMILIES["p5e"]) == usd_per_gpu_hour(
        catalog.GPU_FAMILIES["p5en"]
    )
