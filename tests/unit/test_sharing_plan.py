"""A sharing pool's plan (#23 items 2, 3), without synthesizing: what each mode makes its nodes
advertise and carry, the device plugin config, and the charts' values."""

import pytest
import yaml

from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings
from tests.support.ca_template import node_template, pod_fits_template

RESOURCE = "k8s.io/cluster-autoscaler/node-template/resources/"
ACCELERATOR = "k8s.amazonaws.com/accelerator"


def plan(instance_type="g6.12xlarge", **sharing):
    operator = {"gpu_software": "gpu-operator"} if sharing.get("mode") == "mig" else {}
    return plan_pool(
        PoolSettings(name="p", instance_types=[instance_type], sharing=sharing, **operator)
    )


@pytest.mark.parametrize(
    ("instance_type", "sharing", "advertised", "resources", "gpu_label"),
    [
        ("g6.12xlarge", {}, None, ["nvidia.com/gpu"], True),
        (
            "g6.12xlarge",
            {"mode": "time-slicing", "replicas": 3},
            {"nvidia.com/gpu": 12},
            ["nvidia.com/gpu"],
            True,
        ),
        (
            "g6.12xlarge",
            {"mode": "time-slicing", "replicas": 3, "rename": True},
            {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 12},
            ["nvidia.com/gpu.shared"],
            False,
        ),
        (
            "p5.4xlarge",
            {"mode": "mig", "strategy": "single", "profile": "2g.20gb"},
            {"nvidia.com/gpu": 3},
            ["nvidia.com/gpu"],
            True,
        ),
        (
            "p5e.48xlarge",
            {"mode": "mig", "strategy": "mixed", "layout": {"4g.71gb": 1, "1g.18gb+me": 1}},
            {"nvidia.com/gpu": 0, "nvidia.com/mig-4g.71gb": 8, "nvidia.com/mig-1g.18gb.me": 8},
            ["nvidia.com/mig-4g.71gb", "nvidia.com/mig-1g.18gb.me"],
            False,
        ),
    ],
    ids=["none", "time-slicing", "renamed", "mig-single", "mig-mixed"],
)
def test_what_each_mode_advertises(instance_type, sharing, advertised, resources, gpu_label):
    pool = plan(instance_type, **sharing)
    (group,) = pool.node_groups
    assert group.gpu_resources == advertised
    tags = group.node_template_tags()
    assert {k.removeprefix(RESOURCE): v for k, v in tags.items() if k.startswith(RESOURCE)} == {
        **{r: str(n) for r, n in (advertised or {"nvidia.com/gpu": group.gpu_count}).items()},
        "ephemeral-storage": "200Gi",
    }
    assert (ACCELERATOR in group.labels) is gpu_label
    if pool.sharing is None:
        assert "nvidia.com/device-plugin.config" not in group.labels
        return
    assert pool.sharing.workload_resources == resources
    assert group.labels["nvidia.com/device-plugin.config"] == "p"
    assert ("nvidia.com/mig.config" in group.labels) is (sharing["mode"] == "mig")


def test_the_device_plugin_carries_the_pools_config_as_its_default():
    pool = plan(mode="time-slicing", replicas=6, rename=True)
    assert pool.chart is not None
    config = pool.chart.values["config"]
    assert config["default"] == "p"
    assert yaml.safe_load(config["map"]["p"]) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 6}],
            }
        },
    }


def test_a_request_for_two_shares_fails_instead_of_getting_two_shares_of_one_gpu():
    """With failRequestsGreaterThanOne a container asking for more than one share is refused
    (UnexpectedAdmissionError) rather than given shares that may sit on one GPU; NVIDIA
    recommends it (NVIDIA/k8s-device-plugin v0.20.0 README, "Shared Access to GPUs"). The GPU
    Operator's plugin reads the same config."""
    operator = plan_pool(
        PoolSettings(
            name="p",
            instance_types=["g6.12xlarge"],
            gpu_software="gpu-operator",
            sharing={"mode": "time-slicing", "replicas": 4},
        )
    )
    for pool, config_map in (
        (plan(mode="time-slicing", replicas=4), lambda v: v["config"]["map"]),
        (operator, lambda v: v["devicePlugin"]["config"]["data"]),
    ):
        assert pool.chart is not None
        config = yaml.safe_load(config_map(pool.chart.values)["p"])
        assert config["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True


def test_a_pool_that_does_not_share_keeps_the_plugins_default_config():
    pool = plan()
    assert pool.sharing is None and pool.chart is not None
    assert "config" not in pool.chart.values


def pod(resource, pool):
    return {
        "spec": {
            "nodeSelector": {"gpu-pool.io/pool": pool},
            "tolerations": [
                {
                    "key": "nvidia.com/gpu",
                    "operator": "Equal",
                    "value": "true",
                    "effect": "NoSchedule",
                }
            ],
            "containers": [{"resources": {"limits": {resource: "1"}}}],
        }
    }


@pytest.mark.parametrize(
    "sharing",
    [
        {"mode": "time-slicing", "replicas": 8, "rename": True},
        {"mode": "mig", "strategy": "mixed", "layout": {"3g.40gb": 2}},
    ],
    ids=["renamed", "mig-mixed"],
)
def test_a_whole_gpu_pod_does_not_fit_a_pool_that_advertises_none(sharing):
    """With renamed shares or mixed MIG, nvidia.com/gpu is 0: CA does not scale such a pool up
    for a pod that asks for a whole GPU."""
    (group,) = plan("p5.48xlarge", **sharing).node_groups
    assert not pod_fits_template(
        pod("nvidia.com/gpu", "p"), node_template(group.node_template_tags())
    )


def test_mig_single_advertises_the_profiles_instances_as_gpus():
    pool = plan("p4d.24xlarge", mode="mig", strategy="single", profile="1g.5gb")
    (group,) = pool.node_groups
    tags = group.node_template_tags()
    assert tags[RESOURCE + "nvidia.com/gpu"] == "56"  # 7 x 1g.5gb on each of 8 A100s
    assert group.labels[ACCELERATOR] == "nvidia-a100"  # whole-GPU resource still advertised
    assert pool.chart is not None
    values = pool.chart.values
    assert values["mig"] == {"strategy": "single"}
    config = values["migManager"]["config"]
    assert (config["create"], config["name"], config["default"]) == (
        True,
        "gpu-pool-mig-parted-config",
        "all-disabled",
    )
    # The whole file, as the chart's ConfigMap holds it (keys in the order written): MIG off
    # for a node without the label, and the pool's profile on every GPU.
    assert config["data"] == {
        "config.yaml": (
            "version: v1\n"
            "mig-configs:\n"
            "  all-disabled:\n"
            "  - devices: all\n"
            "    mig-enabled: false\n"
            "  p:\n"
            "  - devices: all\n"
            "    mig-enabled: true\n"
            "    mig-devices:\n"
            "      1g.5gb: 7\n"
        )
    }
    assert yaml.safe_load(values["devicePlugin"]["config"]["data"]["p"]) == {
        "version": "v1",
        "flags": {"migStrategy": "single"},
    }


def test_time_slicing_through_the_gpu_operator_configures_its_plugin():
    pool = plan_pool(
        PoolSettings(
            name="op",
            gpu_software="gpu-operator",
            sharing={"mode": "time-slicing", "replicas": 2},
        )
    )
    assert pool.chart is not None
    config = pool.chart.values["devicePlugin"]["config"]
    assert (config["create"], config["name"], config["default"], list(config["data"])) == (
        True,
        "gpu-pool-device-plugin-config",
        "op",
        ["op"],
    )
    assert "mig" not in pool.chart.values and "migManager" not in pool.chart.values
