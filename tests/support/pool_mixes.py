"""Generated clusters for the property-based tests (tests/unit/test_pool_mixes.py,
tests/synth/test_pool_mixes.py): one to four pools across provisioners, capacity types, GPU
software, zones (the cached lookup's Local Zones among them) and customer keys, as users of
each provisioner write them."""

from __future__ import annotations

from datetime import date
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from gpu_pool.checks import check_settings
from gpu_pool.plan.dra import DRA_DRIVER
from gpu_pool.plan.pool import PoolPlan, plan_pools
from gpu_pool.settings import AppSettings, ConfigError, load_settings
from tests.support.looked_up import ACCOUNT, LOCAL_ZONES, REGION, ZONES

TODAY = date(2026, 12, 2)
KEYS = (
    None,
    "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "arn:aws:kms:us-east-1:123456789012:key/abcd1234-ab12-cd34-ef56-abcdef123456",
)
# Types every provisioner launches (Auto Mode's NVIDIA families, Karpenter's DRA metadata).
TYPES = ("g5.xlarge", "g6.xlarge", "g6e.xlarge")
AVAILABILITY_ZONES = tuple(ZONES[:3])
# The zone lookup as the CLI caches it: the opted-in Local Zones first.
KNOWN_ZONES = [*LOCAL_ZONES, *ZONES]


@st.composite
def pool(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """One pool's settings, as a user of that provisioner writes them."""
    provisioner = draw(st.sampled_from(["cluster-autoscaler", "karpenter", "auto-mode"]))
    zones = (
        AVAILABILITY_ZONES if provisioner == "auto-mode" else (*AVAILABILITY_ZONES, *LOCAL_ZONES)
    )
    settings: dict[str, Any] = {
        "provisioner": provisioner,
        "instance_types": [draw(st.sampled_from(TYPES))],
        "zones": draw(st.lists(st.sampled_from(zones), max_size=2, unique=True)),
        "labels": {"workload": name},
    }
    if provisioner != "auto-mode":
        settings["capacity_type"] = draw(st.sampled_from(["ON_DEMAND", "SPOT"]))
        if (key := draw(st.sampled_from(KEYS))) is not None:
            settings["volume_kms_key_arn"] = key
    if draw(st.booleans()):
        settings["gpu_software"] = DRA_DRIVER
        if provisioner == "cluster-autoscaler":
            settings |= {"min_size": 1, "desired_size": 1}  # GP-DRA-10
    return settings


@st.composite
def cluster(draw: st.DrawFn) -> dict[str, Any]:
    """App settings of one to four pools."""
    count = draw(st.integers(min_value=1, max_value=4))
    names = [f"p{index}" for index in range(count)]
    return {
        "account": ACCOUNT,
        "region": REGION,
        "pools": {name: draw(pool(name)) for name in names},
    }


def valid(app: dict[str, Any]) -> tuple[AppSettings, list[PoolPlan]]:
    """The settings and plans, for mixes a synth accepts (others are other tests' cases)."""
    try:
        settings = load_settings(app, None)
    except ConfigError:
        assume(False)
        raise
    plans = plan_pools(settings)
    found = check_settings(settings, plans, known_zones=KNOWN_ZONES, today=TODAY)
    assume(not any(f.error for f in found.all()))
    return settings, plans


def reordered(app: dict[str, Any], order: list[str]) -> dict[str, Any]:
    return {**app, "pools": {name: app["pools"][name] for name in order}}
