"""The plan layer on its own: what a pool's settings resolve to, before any construct renders it.

Each value here is what a deploy depends on: construct ids (logical ids), node group labels and
taints, the Cluster Autoscaler tags, the device plugin's values and where its pods may run.
"""

from __future__ import annotations

import pytest

from gpu_pool.model.findings import error
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.capacity import CapacityPlan
from gpu_pool.plan.gpu_software import resolved_gpu_software
from gpu_pool.plan.pool import pascal_case, plan_pool, plan_pools
from gpu_pool.settings import AppSettings, PoolSettings, Taint
from gpu_pool.settings.pool import CapacityReservationSettings

TAG = "k8s.io/cluster-autoscaler/node-template/"
GPU_TAINT = Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")


def test_the_default_pool_is_one_g5_group_in_every_subnet():
    plan = plan_pool(PoolSettings())
    assert (plan.name, plan.setting, plan.provisioner) == ("gpu", "pool", "cluster-autoscaler")
    (group,) = plan.node_groups
    assert group.construct_id == "G5Xlarge"
    assert group.setting == "pool.instance_types[0]"
    assert [t.name for t in group.instance_types] == ["g5.xlarge"]
    assert (group.zone, group.ami_type, group.gpu_count, group.disk_size_gib) == (
        None,
        "AL2023_x86_64_NVIDIA",
        1,
        200,
    )
    assert dict(group.labels) == {
        "accelerator": "nvidia",
        "workload": "inference",
        "gpu-pool.io/pool": "gpu",
        "nvidia.com/gpu.present": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-a10g",
        "nvidia.com/gpu.deploy.operands": "false",
    }
    assert group.taints == (GPU_TAINT,)
    assert plan.karpenter is None
    assert plan.unresolved == ()


def test_a_group_carries_the_node_template_cluster_autoscaler_reads_at_zero():
    (group,) = plan_pool(PoolSettings(disk_size_gib=300)).node_groups
    assert group.autoscaler_tags("prod") == {
        "k8s.io/cluster-autoscaler/enabled": "true",
        "k8s.io/cluster-autoscaler/prod": "owned",
        f"{TAG}resources/nvidia.com/gpu": "1",
        f"{TAG}resources/ephemeral-storage": "300Gi",
        f"{TAG}label/accelerator": "nvidia",
        f"{TAG}label/workload": "inference",
        f"{TAG}label/gpu-pool.io/pool": "gpu",
        f"{TAG}label/nvidia.com/gpu.present": "true",
        f"{TAG}label/k8s.amazonaws.com/accelerator": "nvidia-a10g",
        f"{TAG}label/nvidia.com/gpu.deploy.operands": "false",
        f"{TAG}taint/nvidia.com/gpu": "true:NoSchedule",
    }


def test_one_group_per_entry_and_zone_in_the_order_of_the_settings():
    plan = plan_pool(
        PoolSettings(
            name="train",
            instance_types=["p5.48xlarge", ["g6.xlarge", "g5.xlarge"], "g5g.2xlarge"],
            zones=["us-east-1a", "us-east-1b"],
        ),
        "pools.train",
    )
    assert [(g.construct_id, g.setting, g.zone) for g in plan.node_groups] == [
        ("P548xlargeUsEast1a", "pools.train.instance_types[0]", "us-east-1a"),
        ("G6XlargeUsEast1a", "pools.train.instance_types[1]", "us-east-1a"),
        ("G5g2xlargeUsEast1a", "pools.train.instance_types[2]", "us-east-1a"),
        ("P548xlargeUsEast1b", "pools.train.instance_types[0]", "us-east-1b"),
        ("G6XlargeUsEast1b", "pools.train.instance_types[1]", "us-east-1b"),
        ("G5g2xlargeUsEast1b", "pools.train.instance_types[2]", "us-east-1b"),
    ]
    by_id = {g.construct_id: g for g in plan.node_groups}
    assert by_id["P548xlargeUsEast1a"].gpu_count == 8
    assert by_id["G5g2xlargeUsEast1b"].ami_type == "AL2023_ARM_64_NVIDIA"
    assert by_id["G6XlargeUsEast1a"].labels["k8s.amazonaws.com/accelerator"] == "nvidia-mixed"
    assert [[t.name for t in entry] for entry in plan.entries] == [
        ["p5.48xlarge"],
        ["g6.xlarge", "g5.xlarge"],
        ["g5g.2xlarge"],
    ]


def test_scale_up_cost_ranks_by_gpus_then_the_dearest_family():
    groups = plan_pool(PoolSettings(instance_types=[["g6.xlarge", "g5.xlarge"]])).node_groups
    # Not reserved (1), one GPU, the dearer of g6 and g5 per GPU-hour.
    assert groups[0].scale_up_cost == (1, 1, 1.006)


def test_reserved_groups_cost_less_than_any_on_demand_group():
    reserved = plan_pool(
        PoolSettings(
            instance_types=["p5.48xlarge"],
            capacity_reservation={"type": "odcr", "id": "cr-0123456789abcdef0"},
        )
    ).node_groups[0]
    cheapest = plan_pool(PoolSettings(instance_types=["g6f.large"])).node_groups[0]
    assert reserved.reserved and not cheapest.reserved
    assert reserved.scale_up_cost < cheapest.scale_up_cost


def test_capacity_resolves_once_per_pool_for_both_provisioners():
    block = {"type": "capacity-block", "id": "cr-0123456789abcdef0"}
    for provisioner in ("cluster-autoscaler", "karpenter"):
        plan = plan_pool(
            PoolSettings(
                provisioner=provisioner,
                instance_types=["p5.48xlarge"],
                zones=["us-east-1a"],
                efa=True,
                capacity_reservation=block,
            )
        )
        assert plan.capacity.efa_interfaces == 32
        assert plan.capacity.capacity_block
    assert plan_pool(PoolSettings(instance_types=["p5.48xlarge"])).capacity.efa_interfaces == 0


def test_an_explicit_ami_type_wins_and_bottlerocket_is_derived_per_architecture():
    explicit = plan_pool(PoolSettings(ami_type="AL2023_ARM_64_NVIDIA"))
    assert explicit.node_groups[0].ami_type == "AL2023_ARM_64_NVIDIA"
    rocket = plan_pool(PoolSettings(ami_family="BOTTLEROCKET", instance_types=["g5g.xlarge"]))
    assert rocket.node_groups[0].ami_type == "BOTTLEROCKET_ARM_64_NVIDIA"


def test_entries_the_catalog_cannot_resolve_become_findings_and_no_group():
    plan = plan_pool(PoolSettings(instance_types=["g5.xlarge", ["g4ad.xlarge"], []]))
    assert [g.construct_id for g in plan.node_groups] == ["G5Xlarge"]
    assert plan.unresolved == (
        error(
            "GP-CATALOG-02",
            "pool.instance_types[1]",
            "'g4ad.xlarge' carries AMD Radeon Pro V520, not an NVIDIA GPU; the NVIDIA AMIs, "
            "device plugin and GPU Operator do nothing there",
        ),
        error(
            "GP-CATALOG-01", "pool.instance_types[2]", "empty list; name at least one instance type"
        ),
    )


def test_what_a_workload_needs_to_land_on_the_pool():
    plan = plan_pool(PoolSettings(taints=[GPU_TAINT, Taint(key="dedicated", effect="NoExecute")]))
    assert plan.workload_node_selector == {"gpu-pool.io/pool": "gpu"}
    assert plan.workload_tolerations == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "", "effect": "NoExecute"},
    ]
    assert plan.node_taints() == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "true"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]


def test_the_device_plugin_selects_the_pool_label_and_tolerates_each_taint():
    plan = plan_pool(PoolSettings(name="infer", taints=[GPU_TAINT]))
    chart = plan.chart
    assert chart is not None
    assert (chart.construct_id, chart.release, chart.version) == (
        "DevicePlugin",
        "nvidia-device-plugin-infer",
        "0.20.0",
    )
    assert chart.values == {
        "nodeSelector": {"gpu-pool.io/pool": "infer"},
        "tolerations": [
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ],
    }
    (group,) = plan.node_groups
    assert pod_fits_node(chart.device_plugin_pod, group.labels, plan.node_taints())
    assert not pod_fits_node(chart.device_plugin_pod, {"gpu-pool.io/pool": "other"}, [])


def test_gpu_software_defaults_follow_the_ami_and_an_override_pins_the_chart():
    assert resolved_gpu_software(PoolSettings(), ultraserver=False) == "device-plugin"
    rocket = plan_pool(PoolSettings(ami_family="BOTTLEROCKET"))
    assert (rocket.gpu_software, rocket.chart) == ("none", None)
    operator = plan_pool(
        PoolSettings(gpu_software="gpu-operator", versions={"gpu_operator": "v26.3.0"})
    )
    assert operator.chart is not None
    assert (operator.chart.construct_id, operator.chart.release, operator.chart.version) == (
        "GpuOperator",
        "gpu-operator",
        "v26.3.0",
    )
    # The operator's own pool keeps its operands; no opt-out label there.
    assert "nvidia.com/gpu.deploy.operands" not in operator.node_groups[0].labels


def test_a_karpenter_pool_has_a_node_pool_plan_and_no_node_groups():
    plan = plan_pool(
        PoolSettings(
            name="batch",
            provisioner="karpenter",
            instance_types=["g6.xlarge", "g6.12xlarge"],
            capacity_type="SPOT",
            max_size=3,
        ),
        "pools.batch",
    )
    assert plan.provisioner == "karpenter"
    assert plan.node_groups == ()
    karpenter = plan.karpenter
    assert karpenter is not None
    assert karpenter.gpu_limit == 12  # 3 nodes of the largest type, 4 GPUs
    assert karpenter.requirements() == [
        {
            "key": "karpenter.k8s.aws/instance-gpu-manufacturer",
            "operator": "In",
            "values": ["nvidia"],
        },
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["g6.xlarge", "g6.12xlarge"],
        },
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
    ]
    assert [(s.setting, s.description) for s in plan.node_shapes] == [
        ("pools.batch.instance_types", "Karpenter's g6.xlarge nodes"),
        ("pools.batch.instance_types", "Karpenter's g6.12xlarge nodes"),
    ]
    shape = plan.node_shapes[1]
    assert shape.labels["karpenter.k8s.aws/instance-gpu-count"] == "4"
    assert shape.labels["gpu-pool.io/pool"] == "batch"


def test_node_shapes_of_a_node_group_pool_are_its_groups():
    plan = plan_pool(PoolSettings(instance_types=["g5.xlarge", "g5g.xlarge"]))
    assert [(s.setting, s.description, s.architecture.value) for s in plan.node_shapes] == [
        ("pool.instance_types[0]", "g5.xlarge nodes", "x86_64"),
        ("pool.instance_types[1]", "g5g.xlarge nodes", "arm64"),
    ]


def test_pools_are_planned_in_the_order_the_settings_list_them_with_their_paths():
    settings = AppSettings.model_validate(
        {"pools": {"b": {"instance_types": ["g6.xlarge"]}, "a": {}}}
    )
    assert [(p.name, p.setting) for p in plan_pools(settings)] == [
        ("b", "pools.b"),
        ("a", "pools.a"),
    ]
    assert [(p.name, p.setting) for p in plan_pools(AppSettings())] == [("gpu", "pool")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("g5.xlarge", "G5Xlarge"), ("p6-b200.48xlarge-us-east-1a", "P6B20048xlargeUsEast1a")],
)
def test_construct_ids_are_pascal_case(text, expected):
    assert pascal_case(text) == expected


def test_a_karpenter_capacity_block_pool_takes_reserved_capacity_only():
    """The API server's verdict on these objects: tests/e2e/test_karpenter_crds.py."""
    plan = plan_pool(
        PoolSettings(
            provisioner="karpenter",
            instance_types=["p5.48xlarge"],
            zones=["us-east-1a"],
            capacity_reservation={"type": "capacity-block", "id": "cr-0123456789abcdef0"},
        )
    ).karpenter
    assert plan is not None
    node_pool = plan.node_pool()
    requirements = {
        r["key"]: r["values"] for r in node_pool["spec"]["template"]["spec"]["requirements"]
    }
    # A block is reserved capacity only: no on-demand fallback inside the NodePool.
    assert requirements["karpenter.sh/capacity-type"] == ["reserved"]
    node_class = plan.ec2_node_class(
        role="gpu-pool-karpenter-node",
        subnet_ids=["subnet-0123456789abcdef0"],
        security_group_ids=["sg-0123456789abcdef0"],
        tags={},
    )
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"}
    ]
    assert "placementGroupSelector" not in node_class["spec"]


RESERVATION = "cr-0123456789abcdef0"
GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/gpus"


@pytest.mark.parametrize(
    ("reservation", "capacity_type", "expected"),
    [
        (None, "ON_DEMAND", ("ON_DEMAND", None, None, ["on-demand"], [])),
        (None, "SPOT", ("SPOT", None, None, ["spot"], [])),
        (
            {"type": "capacity-block", "id": RESERVATION},
            "ON_DEMAND",
            (
                "CAPACITY_BLOCK",
                {"CapacityReservationTarget": {"CapacityReservationId": RESERVATION}},
                {"MarketType": "capacity-block"},
                ["reserved"],
                [{"id": RESERVATION}],
            ),
        ),
        (
            {"type": "odcr", "id": RESERVATION, "fallback": "on-demand"},
            "ON_DEMAND",
            (
                "ON_DEMAND",
                {"CapacityReservationTarget": {"CapacityReservationId": RESERVATION}},
                None,
                ["reserved", "on-demand"],
                [{"id": RESERVATION}],
            ),
        ),
        (
            {"type": "odcr", "resource_group_arn": GROUP},
            "ON_DEMAND",
            (
                "ON_DEMAND",
                {
                    "CapacityReservationPreference": "capacity-reservations-only",
                    "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": GROUP},
                },
                None,
                ["reserved"],
                [],
            ),
        ),
        (
            {"type": "odcr", "preference": "capacity-reservations-only"},
            "ON_DEMAND",
            (
                "ON_DEMAND",
                {"CapacityReservationPreference": "capacity-reservations-only"},
                None,
                ["reserved"],
                [],
            ),
        ),
    ],
    ids=["none-on-demand", "none-spot", "block", "odcr-id-fallback", "odcr-group", "odcr-only"],
)
def test_a_reservation_in_each_provisioners_terms(reservation, capacity_type, expected):
    """Node group capacity type, launch template CapacityReservationSpecification and
    InstanceMarketOptions, NodePool capacity types and EC2NodeClass selector terms."""
    settings = None if reservation is None else CapacityReservationSettings(**reservation)
    plan = CapacityPlan(settings)
    assert (
        plan.node_group_capacity_type(capacity_type),
        plan.capacity_reservation_specification(),
        plan.instance_market_options(),
        plan.karpenter_capacity_types(capacity_type),
        plan.karpenter_reservation_terms(),
    ) == expected


def test_efa_is_one_interface_per_network_card_device_index_1_past_card_0():
    interfaces = CapacityPlan(efa_interfaces=3).network_interfaces(("sg-a", "sg-b"))
    shared = {"InterfaceType": "efa", "Groups": ["sg-a", "sg-b"], "DeleteOnTermination": True}
    assert interfaces == [
        {"NetworkCardIndex": 0, "DeviceIndex": 0, **shared},
        {"NetworkCardIndex": 1, "DeviceIndex": 1, **shared},
        {"NetworkCardIndex": 2, "DeviceIndex": 1, **shared},
    ]
    assert CapacityPlan().network_interfaces(["sg-a"]) == []
