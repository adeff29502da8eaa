"""#39 item 4: the account's EC2 vCPU quotas for GPU instances. Which quota each type and market
counts against (EC2 user guide, "Amazon EC2 service quotas": Running On-Demand G and VT
instances, Running On-Demand P instances, and their Spot twins), a pool's vCPUs at max size, and
GP-REGION-09 when they exceed the looked-up value: `max_size: 5000` is no longer silent."""

from __future__ import annotations

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.model.quotas import vcpu_quota
from gpu_pool.plan.pool import plan_pools
from gpu_pool.plan.quota import vcpus_at_max
from gpu_pool.plan.record import pool_record
from gpu_pool.plan.region import RegionFacts
from gpu_pool.settings import load_settings
from tests.support.rules import documented

ACCOUNT, REGION = "123456789012", "us-east-1"
G_ON_DEMAND, P_ON_DEMAND, G_SPOT, P_SPOT = "L-DB2E81BA", "L-417A185B", "L-3819A6DF", "L-7212CCBC"


@pytest.mark.parametrize(
    ("instance_type", "spot", "code"),
    [
        ("g5.xlarge", False, G_ON_DEMAND),
        ("g6e.12xlarge", True, G_SPOT),
        ("gr6.4xlarge", False, G_ON_DEMAND),
        ("p5.48xlarge", False, P_ON_DEMAND),
        ("p4d.24xlarge", True, P_SPOT),
        ("p6-b200.48xlarge", False, P_ON_DEMAND),
    ],
)
def test_each_gpu_type_counts_against_its_familys_quota(instance_type, spot, code):
    quota = vcpu_quota(instance_type, spot)
    assert quota is not None and quota.code == code


def _settings(pool: dict, **app):
    return load_settings({"account": ACCOUNT, "region": REGION, **app, "pools": {"gpu": pool}}, None)


def _at_max(pool: dict, **app) -> dict[str, int]:
    (plan,) = plan_pools(_settings(pool, **app))
    return {q.code: v for q, v in vcpus_at_max(pool_record(plan, None, None)).items()}


def test_a_node_group_pool_needs_max_size_nodes_of_its_largest_type_per_group():
    # g5.xlarge 4 vCPUs and g6e.12xlarge 48: separate node groups (GPU counts differ), each up
    # to max_size nodes; p5.48xlarge (192) under the P quota.
    pool = {"instance_types": ["g5.xlarge", "g6e.12xlarge", "p5.48xlarge"], "max_size": 3}
    assert _at_max(pool) == {G_ON_DEMAND: 3 * 4 + 3 * 48, P_ON_DEMAND: 3 * 192}
    assert _at_max({**pool, "capacity_type": "SPOT"}) == {G_SPOT: 156, P_SPOT: 576}


def test_a_karpenter_pool_is_bounded_by_its_gpu_limit():
    """8 nodes but 16 GPUs: at most 2 p5.48xlarge (8 GPUs each), or 8 g5.12xlarge (4 GPUs)."""
    pool = {
        "provisioner": "karpenter",
        "instance_types": ["p5.48xlarge", "g5.12xlarge"],
        "max_size": 8,
        "karpenter": {"gpu_limit": 16},
    }
    assert _at_max(pool) == {P_ON_DEMAND: 2 * 192, G_ON_DEMAND: 4 * 48}


def test_a_capacity_block_pool_counts_against_no_quota():
    pool = {
        "instance_types": ["p5.48xlarge"],
        "zones": ["us-east-1a"],
        "max_size": 2,
        "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
    }
    assert _at_max(pool) == {}


def _warnings(pools: dict, quotas: dict[str, float]) -> list[str]:
    settings = load_settings({"account": ACCOUNT, "region": REGION, "pools": pools}, None)
    facts = RegionFacts(REGION, vcpu_quotas=quotas)
    found = check_settings(settings, plan_pools(settings), region_facts=facts).all()
    return [str(f) for f in documented(found) if f.rule == "GP-REGION-09"]


def test_max_size_5000_above_the_quota_is_gp_region_09():
    pools = {"gpu": {"instance_types": ["g5.xlarge"], "max_size": 5000}}
    assert _warnings(pools, {G_ON_DEMAND: 64}) == [
        "pools.gpu.max_size: at max size the pools need up to 20000 vCPUs of Running On-Demand "
        "G and VT instances (L-DB2E81BA; gpu 20000), and the account's quota in us-east-1 is 64 "
        "(Service Quotas, cached in cdk.context.json): launches past it fail "
        "(VcpuLimitExceeded), so the pools stop short of max_size. Request an increase (aws "
        "service-quotas request-service-quota-increase --service-code ec2 --quota-code "
        "L-DB2E81BA --desired-value 20000 --region us-east-1), or lower max_size; `cdk context "
        "--reset` the entry to read the quota again"
    ]


def test_pools_sharing_a_quota_are_summed():
    """Review of #39: two pools of 40 vCPUs each under a 64-vCPU quota passed one by one."""
    pool = {"instance_types": ["g6.xlarge"], "max_size": 10}
    (warning,) = _warnings({"a": pool, "b": pool}, {G_ON_DEMAND: 64})
    assert warning.startswith(
        "pools.a.max_size + pools.b.max_size: at max size the pools need up to 80 vCPUs of "
        "Running On-Demand G and VT instances (L-DB2E81BA; a 40, b 40)"
    )
    assert "--desired-value 80 " in warning


def test_a_spot_pool_names_the_spot_error():
    pools = {"gpu": {"instance_types": ["g5.xlarge"], "max_size": 100, "capacity_type": "SPOT"}}
    (warning,) = _warnings(pools, {G_SPOT: 8})
    assert "(MaxSpotInstanceCountExceeded)" in warning


def test_a_pool_within_its_quota_or_with_it_unknown_is_no_finding():
    pool = {"instance_types": ["g5.xlarge"], "max_size": 16}
    assert _warnings({"gpu": pool}, {G_ON_DEMAND: 64}) == []
    assert _warnings({"gpu": pool}, {}) == []
    # Another market's quota is not this pool's.
    assert _warnings({"gpu": {**pool, "max_size": 5000}}, {G_SPOT: 64}) == []


def test_a_karpenter_pool_counts_the_largest_mix_within_its_limits():
    """Review of #39: 2 nodes and 9 GPUs hold 1 g6.48xlarge (8 GPUs, 192 vCPUs) and 1
    g6.xlarge (1 GPU, 4 vCPUs): 196 vCPUs, more than any one type's share."""
    pool = {
        "provisioner": "karpenter",
        "instance_types": ["g6.48xlarge", "g6.xlarge"],
        "max_size": 2,
        "karpenter": {"gpu_limit": 9},
    }
    assert _at_max(pool) == {G_ON_DEMAND: 196}


def test_node_groups_karpenter_and_auto_mode_pools_share_the_quota_they_run_under():
    """#53 item 13: the warning for every provisioner whose instances count against the quota:
    a node group's, a Karpenter NodePool's and an Auto Mode NodePool's are all EC2 instances of
    the account (EC2 user guide, "Amazon EC2 service quotas"), summed in one warning."""
    pool = {"instance_types": ["g6.xlarge"], "max_size": 10}
    pools = {
        "groups": pool,
        "karpenter": {**pool, "provisioner": "karpenter"},
        "auto": {**pool, "provisioner": "auto-mode"},
    }
    (warning,) = _warnings(pools, {G_ON_DEMAND: 64})
    assert warning.startswith(
        "pools.groups.max_size + pools.karpenter.max_size + pools.auto.max_size: at max size the "
        "pools need up to 120 vCPUs of Running On-Demand G and VT instances (L-DB2E81BA; groups "
        "40, karpenter 40, auto 40)"
    )
