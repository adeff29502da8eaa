"""The scheduling model against Kubernetes' documented semantics."""

import pytest

from gpu_pool.model.scheduling import node_affinity_matches, pod_fits_node, untolerated_taints

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}, True),
        ({"key": "nvidia.com/gpu", "value": "true"}, True),  # operator defaults to Equal
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"}, False),
        ({"operator": "Exists"}, True),  # empty key with Exists tolerates everything
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_toleration_semantics(toleration, tolerated):
    assert (untolerated_taints([toleration], [GPU_TAINT]) == []) is tolerated


def test_prefer_no_schedule_never_blocks():
    assert untolerated_taints([], [{"key": "a", "value": "", "effect": "PreferNoSchedule"}]) == []


def test_affinity_terms_are_ored_and_expressions_anded():
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "a", "operator": "In", "values": ["1"]},
                            {"key": "b", "operator": "Exists"},
                        ]
                    },
                    {"matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]},
                ]
            }
        }
    }
    assert node_affinity_matches(affinity, {"a": "1", "b": "x", "c": "y"})
    assert not node_affinity_matches(affinity, {"a": "1", "c": "y"})
    assert node_affinity_matches(affinity, {"z": "1"})
    assert node_affinity_matches(None, {})


def test_node_selector_needs_every_label():
    spec = {"nodeSelector": {"a": "1", "b": "2"}}
    assert pod_fits_node(spec, {"a": "1", "b": "2", "c": "3"}, [])
    assert not pod_fits_node(spec, {"a": "1"}, [])


def _affinity(*expressions):
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
            }
        }
    }


NO_EXECUTE = {"key": "maintenance", "value": "true", "effect": "NoExecute"}


@pytest.mark.parametrize(
    ("tolerations", "blocked"),
    [
        ([], True),  # NoExecute blocks scheduling (and evicts) like NoSchedule
        ([{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}], True),
        ([{"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}], False),
        ([{"key": "maintenance", "operator": "Equal", "value": "true"}], False),  # any effect
    ],
)
def test_no_execute_taints_block_unless_tolerated_for_that_effect(tolerations, blocked):
    assert (untolerated_taints(tolerations, [NO_EXECUTE]) == [NO_EXECUTE]) is blocked


def test_in_and_not_in_with_no_values():
    # `In` with an empty list matches nothing; `NotIn` with one excludes nothing.
    assert not node_affinity_matches(_affinity({"key": "a", "operator": "In"}), {"a": "1"})
    assert not node_affinity_matches(
        _affinity({"key": "a", "operator": "In", "values": []}), {"a": "1"}
    )
    assert node_affinity_matches(_affinity({"key": "a", "operator": "NotIn"}), {"a": "1"})


@pytest.mark.parametrize(
    ("operator", "label", "matches"),
    [
        ("Gt", "5", True),
        ("Gt", "3", False),
        ("Lt", "3", True),
        ("Gt", "x", False),
        ("Lt", None, False),
    ],
)
def test_gt_and_lt_compare_integers(operator, label, matches):
    labels = {} if label is None else {"n": label}
    expression = {"key": "n", "operator": operator, "values": ["4"]}
    assert node_affinity_matches(_affinity(expression), labels) is matches


def test_a_mixed_model_groups_accelerator_label_is_nvidia_mixed():
    from gpu_pool.model import catalog
    from gpu_pool.plan.node_template import gpu_model_label

    assert gpu_model_label([catalog.lookup("g5.xlarge")]) == "nvidia-a10g"
    assert gpu_model_label([catalog.lookup("g6.xlarge"), catalog.lookup("g5.xlarge")]) == (
        "nvidia-mixed"
    )
    assert gpu_model_label([catalog.lookup("g5.xlarge"), catalog.lookup("g5.2xlarge")]) == (
        "nvidia-a10g"
    )


@pytest.mark.parametrize(
    ("toleration", "taint"),
    [
        ({"key": "k", "operator": "Equal"}, {"key": "k", "value": "", "effect": "NoSchedule"}),
        ({"key": "k", "operator": "Equal", "value": ""}, {"key": "k", "effect": "NoSchedule"}),
        ({"key": "k"}, {"key": "k", "effect": "NoSchedule"}),
    ],
    ids=["no-value-vs-empty", "empty-vs-no-value", "neither"],
)
def test_an_absent_value_is_the_empty_value(toleration, taint):
    assert untolerated_taints([toleration], [taint]) == []


def test_not_in_excludes_a_listed_value_and_keeps_nodes_without_the_key():
    expression = {"key": "arch", "operator": "NotIn", "values": ["arm64"]}
    assert not node_affinity_matches(_affinity(expression), {"arch": "arm64"})
    assert node_affinity_matches(_affinity(expression), {"arch": "amd64"})
    assert node_affinity_matches(_affinity(expression), {})


@pytest.mark.parametrize("operator", ["Gt", "Lt"])
def test_gt_and_lt_are_strict(operator):
    expression = {"key": "n", "operator": operator, "values": ["4"]}
    assert not node_affinity_matches(_affinity(expression), {"n": "4"})


def test_an_unknown_operator_is_named():
    with pytest.raises(ValueError, match="^unknown node selector operator 'Near'$"):
        node_affinity_matches(_affinity({"key": "a", "operator": "Near"}), {"a": "1"})


def test_a_pod_needs_its_affinity_and_tolerations_to_fit():
    pod = {
        "affinity": _affinity({"key": "zone", "operator": "In", "values": ["a"]}),
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    }
    assert pod_fits_node(pod, {"zone": "a"}, [GPU_TAINT])
    assert not pod_fits_node(pod, {"zone": "b"}, [GPU_TAINT])
    assert not pod_fits_node({"affinity": pod["affinity"]}, {"zone": "a"}, [GPU_TAINT])


def test_required_pod_affinity_needs_its_topology_key_on_the_node():
    """kube-scheduler's InterPodAffinity filter fails a node without a required affinity term's
    topologyKey; a missing anti-affinity key never fails (interpodaffinity/filtering.go)."""
    peers = {"labelSelector": {"matchLabels": {"run": "x"}}}
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{**peers, "topologyKey": "zone"}]
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{**peers, "topologyKey": "host"}]
        },
    }
    assert pod_fits_node({"affinity": affinity}, {"zone": "a"}, [])
    assert not pod_fits_node({"affinity": affinity}, {"host": "n1"}, [])
