"""The scheduling model against Kubernetes' documented semantics."""

import pytest

from gpu_pool.scheduling import node_affinity_matches, pod_fits_node, untolerated_taints

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
