"""cluster.auto_mode: Auto Mode stays on for a cluster whose last auto-mode pool is gone."""

from __future__ import annotations

import pytest

from tests.support.cfn import only, resources, synth

pytestmark = pytest.mark.synth

AUTO_MODE_KEYS = ("ComputeConfig", "StorageConfig", "KubernetesNetworkConfig")


def _auto_mode(settings):
    _, cluster = only(resources(synth(settings), "AWS::EKS::Cluster"))
    return {key: cluster["Properties"][key] for key in AUTO_MODE_KEYS}


def test_auto_mode_true_keeps_compute_storage_and_load_balancing_on_without_auto_mode_pools():
    with_pool = _auto_mode({"pools": {"gpu": {"provisioner": "auto-mode"}}})
    kept = _auto_mode({"cluster": {"auto_mode": True}, "pools": {"gpu": {}}})
    # The same cluster properties as while the pool used Auto Mode: no built-in node pools,
    # compute, block storage and load balancing enabled (one request, as EKS requires).
    assert kept == with_pool
    assert kept["ComputeConfig"] == {"Enabled": True, "NodePools": []}
    assert kept["StorageConfig"] == {"BlockStorage": {"Enabled": True}}
    assert kept["KubernetesNetworkConfig"]["ElasticLoadBalancing"] == {"Enabled": True}


def test_unset_auto_mode_follows_the_pools():
    assert _auto_mode({})["ComputeConfig"] == {"Enabled": False}


def _guard(settings):
    template = synth(settings)
    guard_id, guard = only(resources(template, "Custom::GpuPoolAutoModeGuard"))
    _, cluster = only(resources(template, "AWS::EKS::Cluster"))
    # CloudFormation updates the guard before the cluster, so a refused turn-off rolls the
    # deploy back with the cluster untouched.
    assert guard_id in cluster["DependsOn"]
    return {k: v for k, v in guard["Properties"].items() if k != "ServiceToken"}


@pytest.mark.parametrize(
    ("settings", "properties"),
    [
        ({}, {"AutoMode": "false", "TurnOffConfirmed": "false"}),
        (
            {"pools": {"gpu": {"provisioner": "auto-mode"}}},
            {"AutoMode": "true", "TurnOffConfirmed": "false"},
        ),
        ({"cluster": {"auto_mode": True}}, {"AutoMode": "true", "TurnOffConfirmed": "false"}),
        ({"cluster": {"auto_mode": False}}, {"AutoMode": "false", "TurnOffConfirmed": "true"}),
    ],
    ids=["default", "auto-mode-pool", "kept-on", "turned-off"],
)
def test_the_cluster_waits_for_its_auto_mode_guard_holding_what_was_rendered(settings, properties):
    assert _guard(settings) == {"ClusterName": "gpu-pool", **properties}
