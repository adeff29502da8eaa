"""Properties of generated clusters (#48 item 10): one to four pools across provisioners,
capacity types, GPU software, zones (Local Zones among them) and customer keys, in any order.
Features were tested alone and the bugs came from their mixes (the first pool only, another
provisioner, another order), so these invariants are checked whatever the mix and order, on
the plan and checks layers (no synth; the mixes: tests/support/pool_mixes.py). The template's
own invariants are tests/synth/test_pool_mixes.py's, on a few synthesized draws. Draws are
modest (max_examples), for the suite's time."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_pool.checks import check_settings
from gpu_pool.checks.region import cluster_zone_names
from gpu_pool.model.aws_names import is_local_zone
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.dra import dra_driver_chart
from gpu_pool.plan.pool import plan_pools
from gpu_pool.plan.repair import karpenter_repair_settings, needs_node_monitoring_agent
from gpu_pool.settings import load_settings
from tests.support.pool_mixes import KNOWN_ZONES, TODAY, cluster, reordered, valid

PLAN_LAYERS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


@PLAN_LAYERS
@given(app=cluster(), data=st.data())
def test_each_pool_and_the_clusters_releases_do_not_depend_on_the_pools_order(app, data):
    """Each pool's plan, the cluster's one DRA driver release and Karpenter's repair gates are
    the same in the reverse order and in a drawn one; so is whether the mix is valid."""
    _, plans = valid(app)
    names = list(app["pools"])
    for order in (names[::-1], data.draw(st.permutations(names))):
        other = load_settings(reordered(app, order), None)
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
    _, plans = valid(app)
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
    settings, plans = valid(app)
    zones = cluster_zone_names(settings, KNOWN_ZONES)
    assert zones and not any(is_local_zone(z) for z in zones)
    karpenter = [p for p in plans if p.provisioner == "karpenter"]
    assert karpenter_repair_settings(p.repair for p in plans) == karpenter_repair_settings(
        p.repair for p in karpenter
    )
