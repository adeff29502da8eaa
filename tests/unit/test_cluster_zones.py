"""The new cluster's own zones and Auto Mode, as the rules and the VPC resolve them (no synth)."""

from __future__ import annotations

from gpu_pool.checks import check_settings
from gpu_pool.plan.cluster import auto_mode_enabled, cluster_zones
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import load_settings
from tests.support.rules import documented

# What the availability-zones lookup caches for us-east-1 (six zones, a to f).
US_EAST_1 = [f"us-east-1{letter}" for letter in "abcdef"]
BOUND = {"account": "123456789012", "region": "us-east-1"}


def _findings(settings, known=(), reservations=None):
    loaded = load_settings(settings, None)
    found = check_settings(
        loaded, plan_pools(loaded), known_zones=known, reservations=reservations
    ).all()
    return [str(f) for f in documented(found) if f.error]


def test_the_cluster_takes_the_regions_first_three_zones_unless_it_names_its_own():
    default = load_settings(BOUND, None)
    assert cluster_zones(default, US_EAST_1) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    # Not looked up yet (or an environment-agnostic stack): nothing to resolve.
    assert cluster_zones(default, []) is None
    named = load_settings({**BOUND, "cluster": {"zones": ["us-east-1d", "us-east-1b"]}}, None)
    assert cluster_zones(named, US_EAST_1) == ["us-east-1d", "us-east-1b"]
    assert cluster_zones(named, []) == ["us-east-1d", "us-east-1b"]


def test_a_pool_zone_outside_the_default_zones_names_cluster_zones():
    settings = {**BOUND, "pools": {"train": {"zones": ["us-east-1d"]}}}
    assert _findings(settings, US_EAST_1) == [
        "pools.train.zones: us-east-1d not among the cluster's zones (us-east-1a, us-east-1b, "
        "us-east-1c: the region's first three): choose among them, or list every zone the "
        "cluster needs in cluster.zones before the first deploy (a deployed cluster keeps the "
        "zones it was created in: EKS takes no subnet of another zone)"
    ]
    # Before the lookup there is nothing to judge against.
    assert _findings(settings) == []
    pinned = {**settings, "cluster": {"zones": ["us-east-1a", "us-east-1d"]}}
    assert _findings(pinned, US_EAST_1) == []


def test_pool_zones_in_a_stack_without_account_need_the_clusters_own_zones():
    # Region without account: no zone lookup ever, so the VPC would be the pools' zones (one
    # zone for a lone EFA pool, which EKS refuses; issue 32 item 1).
    settings = {
        "region": "us-east-1",
        "pools": {"train": {"instance_types": ["p5.48xlarge"], "zones": ["us-east-1a"]}},
    }
    assert _findings(settings) == [
        "cluster.zones: required when pools name zones (us-east-1a) and account is unset: "
        "without an account the region's zones cannot be looked up, and the VPC would hold "
        "only the pools' zones; list two or more zones of us-east-1 that include them, or set "
        "account"
    ]
    named = {**settings, "cluster": {"zones": ["us-east-1a", "us-east-1b"]}}
    assert _findings(named) == []
    assert _findings({"region": "us-east-1"}) == []


def test_cluster_zones_must_be_zones_the_account_has():
    settings = {**BOUND, "cluster": {"zones": ["us-east-1a", "us-east-1g"]}}
    assert _findings(settings, US_EAST_1) == [
        "cluster.zones: 'us-east-1g' is not an availability zone of us-east-1 this account has "
        "(us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f, from "
        "cdk.context.json): choose among them"
    ]


def test_a_looked_up_reservation_outside_the_cluster_zones_names_cluster_zones():
    pool = {
        "instance_types": ["p5.48xlarge"],
        "zones": ["us-east-1a"],
        "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
    }
    block = ReservationFacts("cr-0123456789abcdef0", "us-east-1e", "p5.48xlarge", 2)
    found = _findings({**BOUND, "pools": {"train": pool}}, US_EAST_1, {"train": block})
    assert (
        "cluster.zones: cr-0123456789abcdef0 (pool train) is in us-east-1e, outside the "
        "cluster's zones (us-east-1a, us-east-1b, us-east-1c): list us-east-1e in cluster.zones "
        "before the cluster's first deploy (a deployed cluster keeps the zones it was created in)"
    ) in found
    inside = ReservationFacts("cr-0123456789abcdef0", "us-east-1a", "p5.48xlarge", 2)
    assert _findings({**BOUND, "pools": {"train": pool}}, US_EAST_1, {"train": inside}) == []


def test_auto_mode_stays_on_when_the_setting_says_so():
    auto_pool = {"pools": {"auto": {"provisioner": "auto-mode"}}}
    assert auto_mode_enabled(load_settings(auto_pool, None))
    assert not auto_mode_enabled(load_settings({}, None))
    assert auto_mode_enabled(load_settings({"cluster": {"auto_mode": True}}, None))
