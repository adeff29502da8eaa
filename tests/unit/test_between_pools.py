"""The rules between the pools of one cluster (gpu_pool/checks/between_pools.py): each with the
exact message users read, from app settings and from pools added one by one as the library
does."""

from dataclasses import replace

import pytest

from gpu_pool.checks.between_pools import check_one_device_plugin_per_node, check_pool_among
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings
from tests.support import rules
from tests.support.rules import documented

# (settings, [(E|W, message), ...]): the rules between pools, each with its exact message.
CROSS_POOL_CASES = {
    "two-gpu-operators": (
        {"pools": {"a": {"gpu_software": "gpu-operator"}, "b": {"gpu_software": "gpu-operator"}}},
        [
            (
                "E",
                "pools.b.gpu_software: 'gpu-operator', but pool 'a' already installs the GPU "
                "Operator, which is cluster-wide and installed once: use 'device-plugin' for "
                "pool 'b'",
            ),
            (
                "W",
                "pools.b.labels: pool 'b' has the same labels and taints as pool 'a'; a pod that "
                "selects these labels may land on either: select gpu-pool.io/pool: b, or give the "
                "pools distinct labels",
            ),
        ],
    ),
    "same-labels-and-taints": (
        {"pools": {"a": {}, "b": {"instance_types": ["g6.xlarge"]}}},
        [
            (
                "W",
                "pools.b.labels: pool 'b' has the same labels and taints as pool 'a'; a pod that "
                "selects these labels may land on either: select gpu-pool.io/pool: b, or give the "
                "pools distinct labels",
            ),
        ],
    ),
    "same-labels-other-architecture": (
        {
            "pools": {
                "x86": {},
                "arm": {"instance_types": ["g5g.xlarge"], "taints": []},
            }
        },
        [
            (
                "W",
                "pools.arm.taints: no taint: any pod can land on a GPU node and keep it (and its "
                "cost) alive; add e.g. nvidia.com/gpu=true:NoSchedule",
            ),
            (
                "W",
                "pools.arm.labels: pool 'arm' has the same labels as pool 'x86' but runs arm64 "
                "nodes where it runs x86_64; a pod without a kubernetes.io/arch selector may "
                "land on either: give the pools distinct labels, or select kubernetes.io/arch in "
                "the pod",
            ),
        ],
    ),
    "tag-budget-per-pool": (
        {
            "pools": {
                "a": {"labels": {"workload": "a"}},
                "b": {"labels": {f"l{i}": "x" for i in range(40)}},
            }
        },
        [
            (
                "E",
                "pools.b.labels: labels and taints need 49 ASG tags, plus 3 EKS adds: 52, over "
                "Auto Scaling's 50 per group; use fewer labels/taints",
            ),
        ],
    ),
    "distinct-pools": (
        {
            "pools": {
                "a": {"labels": {"workload": "a"}},
                "b": {"labels": {"workload": "b"}, "ami_family": "BOTTLEROCKET"},
            }
        },
        [],
    ),
    "same-labels-one-pool-of-both-architectures": (
        {
            "pools": {
                "arm": {"instance_types": ["g5g.xlarge"]},
                "mixed": {"instance_types": ["g5.xlarge", "g5g.xlarge"]},
            }
        },
        [
            (
                "W",
                "pools.mixed.instance_types: mixes CPU architectures (amd64: g5.xlarge; arm64: "
                "g5g.xlarge): a pending pod may get a node of either, and a container image "
                "built for one architecture fails on the other's (exec format error); put each "
                "architecture in a pool of its own, or give every pod of this pool a "
                "kubernetes.io/arch nodeSelector",
            ),
            (
                "W",
                "pools.mixed.labels: pool 'mixed' has the same labels as pool 'arm' but runs "
                "arm64/x86_64 nodes where it runs arm64; a pod without a kubernetes.io/arch "
                "selector may land on either: give the pools distinct labels, or select "
                "kubernetes.io/arch in the pod",
            ),
        ],
    ),
    "same-labels-after-a-pool-of-both-architectures": (
        {
            "pools": {
                "mixed": {"instance_types": ["g5.xlarge", "g5g.xlarge"]},
                "arm": {"instance_types": ["g5g.xlarge"]},
            }
        },
        [
            (
                "W",
                "pools.mixed.instance_types: mixes CPU architectures (amd64: g5.xlarge; arm64: "
                "g5g.xlarge): a pending pod may get a node of either, and a container image "
                "built for one architecture fails on the other's (exec format error); put each "
                "architecture in a pool of its own, or give every pod of this pool a "
                "kubernetes.io/arch nodeSelector",
            ),
            (
                "W",
                "pools.arm.labels: pool 'arm' has the same labels as pool 'mixed' but runs "
                "arm64 nodes where it runs arm64/x86_64; a pod without a kubernetes.io/arch "
                "selector may land on either: give the pools distinct labels, or select "
                "kubernetes.io/arch in the pod",
            ),
        ],
    ),
    "same-labels-distinct-taints": (
        {
            "pools": {
                "a": {},
                "b": {"taints": [{"key": "team", "value": "b", "effect": "NoSchedule"}]},
            }
        },
        [],
    ),
}


@pytest.mark.parametrize(
    ("settings", "expected"), CROSS_POOL_CASES.values(), ids=CROSS_POOL_CASES.keys()
)
def test_cross_pool_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected


@pytest.mark.synth
@pytest.mark.parametrize(
    ("settings", "expected"),
    [v for v in CROSS_POOL_CASES.values() if any(level == "E" for level, _ in v[1])],
)
def test_cross_pool_errors_stop_before_anything_is_synthesized(settings, expected):
    rules.assert_nothing_built(settings, expected)


def test_a_second_pool_of_the_same_name_is_one_line():
    """The rules after it would only restate it (both plugins select both pools' nodes)."""
    first = plan_pool(PoolSettings(), "pools.a")
    second = plan_pool(PoolSettings(instance_types=["g6.xlarge"]), "pools.b")
    assert [str(f) for f in documented(check_pool_among(second, [first]))] == [
        "pools.b.name: another pool on this cluster is already named 'gpu'; the name labels "
        "the pool's nodes and names its device plugin release, so it must be unique per "
        "cluster: rename one",
    ]


def test_a_second_gpu_operator_is_refused_and_the_other_rules_still_run():
    operator = plan_pool(PoolSettings(name="x", gpu_software="gpu-operator"), "pools.x")
    plugin = plan_pool(PoolSettings(), "pools.a")
    second = plan_pool(
        PoolSettings(name="y", gpu_software="gpu-operator", instance_types=["g6.xlarge"]),
        "pools.y",
    )
    found = documented(check_pool_among(second, [operator, plugin]))
    assert [(f.error, str(f)) for f in found] == [
        (
            True,
            "pools.y.gpu_software: 'gpu-operator', but pool 'x' already installs the GPU "
            "Operator, which is cluster-wide and installed once: use 'device-plugin' for pool "
            "'y'",
        ),
        (
            False,
            "pools.y.labels: pool 'y' has the same labels and taints as pool 'x'; a pod that "
            "selects these labels may land on either: select gpu-pool.io/pool: y, or give the "
            "pools distinct labels",
        ),
        (
            False,
            "pools.y.labels: pool 'y' has the same labels and taints as pool 'gpu'; a pod that "
            "selects these labels may land on either: select gpu-pool.io/pool: y, or give the "
            "pools distinct labels",
        ),
    ]


def test_a_device_plugin_that_misses_its_own_nodes_is_an_error():
    plan = plan_pool(PoolSettings(), "pools.a")
    assert plan.chart is not None
    lost = replace(
        plan,
        chart=replace(
            plan.chart, device_plugin_pod={"nodeSelector": {"gpu-pool.io/pool": "elsewhere"}}
        ),
    )
    (finding,) = documented(check_one_device_plugin_per_node([lost], lost))
    assert (finding.error, str(finding)) == (
        True,
        "pools.a.instance_types[0]: the device plugin would not run on g5.xlarge nodes of pool "
        "'gpu' (labels {'accelerator': 'nvidia', 'workload': 'inference', 'gpu-pool.io/pool': "
        "'gpu', 'nvidia.com/gpu.present': 'true', 'k8s.amazonaws.com/accelerator': "
        "'nvidia-a10g', 'nvidia.com/gpu.deploy.operands': 'false'}); they would advertise no "
        "nvidia.com/gpu and GPU pods would stay Pending",
    )


def test_a_plugin_reaches_only_the_nodes_whose_taints_it_tolerates():
    # Same name (the plans a duplicate name would make), but 'b' adds a taint: 'a's plugin
    # cannot run on 'b's nodes, 'b's plugin (tolerating both taints) runs on 'a's.
    first = plan_pool(PoolSettings(), "pools.a")
    team = {"key": "team", "value": "b", "effect": "NoSchedule"}
    gpu = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    second = plan_pool(PoolSettings(instance_types=["g6.xlarge"], taints=[gpu, team]), "pools.b")
    assert [
        str(f) for f in documented(check_one_device_plugin_per_node([first, second], second))
    ] == [
        "pools.b: g5.xlarge nodes of pool 'gpu' would also run the device plugin of pool "
        "'gpu'; two plugins on one node fight over its GPUs: pool names must be unique per "
        "cluster",
    ]


def test_past_a_second_operator_the_other_pools_plugins_are_still_judged():
    """Two GPU Operator pools are another rule's finding, not this one's; a plugin after them
    that reaches the new pool's nodes (here one tolerating everything) is still named."""
    operator = plan_pool(PoolSettings(name="x", gpu_software="gpu-operator"), "pools.x")
    plan = plan_pool(PoolSettings(), "pools.a")
    assert plan.chart is not None
    greedy = replace(
        plan,
        chart=replace(plan.chart, device_plugin_pod={"tolerations": [{"operator": "Exists"}]}),
    )
    new = plan_pool(
        PoolSettings(name="y", gpu_software="gpu-operator", instance_types=["g6.xlarge"]),
        "pools.y",
    )
    found = documented(check_one_device_plugin_per_node([operator, greedy, new], new))
    assert [str(f) for f in found] == [
        "pools.y: g6.xlarge nodes of pool 'y' would also run the device plugin of pool 'gpu'; "
        "two plugins on one node fight over its GPUs: pool names must be unique per cluster",
    ]
