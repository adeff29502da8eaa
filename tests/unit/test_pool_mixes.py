"""Properties of generated clusters (#48 item 10): one to four pools across provisioners,
capacity types, GPU software, zones (Local Zones among them) and customer keys, in any order.
Features were tested alone and the bugs came from their mixes (the first pool only, another
provisioner, another order), so these invariants are checked whatever the mix and order, on
the plan and checks layers (no synth); tests/synth/test_pool_mixes.py holds a few synthesized
draws to what only the template shows. Draws are modest (max_examples), for the suite's time."""

from __future__ import annotations

from datetime import date
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpu_pool.checks import check_settings
from gpu_pool.checks.region import cluster_zone_names
from gpu_pool.model.aws_names import is_local_zone
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.dra import DRA_DRIVER, dra_driver_chart
from gpu_pool.plan.pool import PoolPlan, plan_pools
from gpu_pool.plan.repair import karpenter_repair_settings, needs_node_monitoring_agent
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
PLAN_LAYERS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


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


def _valid(app: dict[str, Any]) -> tuple[AppSettings, list[PoolPlan]]:
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


def _reordered(app: dict[str, Any], order: list[str]) -> dict[str, Any]:
    return {**app, "pools": {name: app["pools"][name] for name in order}}


@PLAN_LAYERS
@given(app=cluster(), data=st.data())
def test_each_pool_and_the_clusters_releases_do_not_depend_on_the_pools_order(app, data):
    """Each pool's plan, the cluster's one DRA driver release and Karpenter's repair gates are
    the same in the reverse order and in a drawn one; so is whether the mix is valid."""
    _, plans = _valid(app)
    names = list(app["pools"])
    for order in (names[::-1], data.draw(st.permutations(names))):
        other = load_settings(_reordered(app, order), None)
        others = plan_pools(other)
        found = check_settings(other, others, known_zones=KNOWN_ZONES, today=TODAY)
        assert not any(f.error for f in found.all()), order
        assert {p.name: p for p in plans} == {p.name: p for p in others}, order
        assert dra_driver_chart(plans) == dra_driver_chart(others), order
        assert karpenter_repair_settings(p.repair for p in plans) == karpenter_repair_settings(
            p.repair for p in others
        ), order


@PLAN_LAYERS
@given(app=cluster())
def test_every_node_group_or_karpenter_node_has_the_agent_and_one_gpu_advertiser(app):
    """The agent add-on goes with any pool but Auto Mode's; each node of a node-group or
    Karpenter pool runs exactly one GPU advertiser (its pool's device plugin, or the cluster's
    one DRA driver release), and an Auto Mode node none of ours (it runs its own)."""
    _, plans = _valid(app)
    assert needs_node_monitoring_agent(p.provisioner for p in plans) is any(
        p.provisioner != "auto-mode" for p in plans
    )
    dra = dra_driver_chart(plans)
    advertisers = [
        p.chart.device_plugin_pod for p in plans if p.chart and p.chart.device_plugin_pod
    ]
    if dra is not None and dra.device_plugin_pod is not None:
        advertisers.append(dra.device_plugin_pod)
    for plan in plans:
        for shape in plan.node_shapes:
            reaching = [
                a for a in advertisers if pod_fits_node(a, shape.labels, plan.node_taints())
            ]
            expected = 0 if plan.provisioner == "auto-mode" else 1
            assert len(reaching) == expected, (plan.name, shape.description)


@PLAN_LAYERS
@given(app=cluster())
def test_the_cluster_takes_no_local_zone_and_karpenters_gates_follow_its_pools(app):
    settings, plans = _valid(app)
    zones = cluster_zone_names(settings, KNOWN_ZONES)
    assert zones and not any(is_local_zone(z) for z in zones)
    karpenter = [p for p in plans if p.provisioner == "karpenter"]
    assert karpenter_repair_settings(p.repair for p in plans) == karpenter_repair_settings(
        p.repair for p in karpenter
    )
