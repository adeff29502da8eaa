"""The cluster-wide rules about controllers, without a synth: one of each kind, where they run,
and a pool nothing scales."""

from gpu_pool.checks.controllers import (
    InstalledController,
    check_one_of_each,
    check_pool_is_scaled,
    check_selector_avoids_pools,
)
from gpu_pool.model.findings import error, warning
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings

AUTOSCALER = InstalledController("autoscaler", "S/CA", {})
KARPENTER = InstalledController("karpenter", "S/K", {})


def test_one_controller_of_each_kind_is_fine():
    assert check_one_of_each([AUTOSCALER, KARPENTER]) == []


def test_a_second_controller_of_a_kind_is_an_error_naming_both_in_path_order():
    second = InstalledController("karpenter", "A/K", {})
    assert check_one_of_each([KARPENTER, AUTOSCALER, second]) == [
        error(
            "GP-CTRL-09",
            "karpenter",
            "Karpenter is added 2 times to one cluster (A/K, S/K); each installs Helm release "
            "'karpenter' in the same namespace, so all but one fail to deploy: keep one",
        )
    ]


def test_a_selector_is_judged_against_every_pools_nodes():
    plans = [plan_pool(PoolSettings(name="a")), plan_pool(PoolSettings(name="b"))]
    assert check_selector_avoids_pools({"role": "system"}, plans, "autoscaler") == []
    assert check_selector_avoids_pools({}, plans, "autoscaler") == []
    assert check_selector_avoids_pools({"gpu-pool.io/pool": "b"}, plans, "karpenter") == [
        error(
            "GP-CTRL-08",
            "karpenter.node_selector",
            "{'gpu-pool.io/pool': 'b'} selects pool 'b', whose GPU nodes are tainted: the "
            "karpenter pod would stay Pending there (or keep a GPU node from scaling down): "
            "select the system nodes",
        )
    ]


def test_a_node_group_pool_at_min_zero_needs_a_cluster_autoscaler():
    idle = plan_pool(PoolSettings())
    assert check_pool_is_scaled(idle, [KARPENTER]) == [
        warning(
            "GP-CTRL-10",
            "pool.min_size",
            "0, and no ClusterAutoscaler is added to this cluster: nothing starts the pool's "
            "first node unless a Cluster Autoscaler already runs on the cluster; add "
            "ClusterAutoscaler, or a min_size above 0",
        )
    ]
    assert check_pool_is_scaled(idle, [AUTOSCALER]) == []
    assert check_pool_is_scaled(plan_pool(PoolSettings(min_size=1, desired_size=1)), []) == []
    karpenter_pool = plan_pool(PoolSettings(provisioner="karpenter"))
    assert check_pool_is_scaled(karpenter_pool, []) == []
