"""Every NodePool and EC2NodeClass gpu-pool renders, judged by the real API server (the pinned
1.36 patch) with Karpenter's own CRDs from its Go module at the pinned release (1.15.0,
pkg/apis/crds): the OpenAPI schema, its defaults and every CEL rule, as kubectl sends an object
(strict field validation: tests/e2e/verdicts.py). The objects are built as the unit and synth
tests build them (the same plans, settings and shared apps), which keep their exact content;
the refusals are the server's own messages, so the judging is seen failing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Template

from gpu_pool.model.karpenter_api import karpenter_refuses
from gpu_pool.plan.pool import plan_pool, plan_pools
from gpu_pool.settings import ConfigError, PoolSettings, load_settings
from tests.e2e.harness.cluster import Cluster
from tests.e2e.harness.stack_objects import manifests
from tests.e2e.verdicts import judge_strictly, refusals, with_crds
from tests.support.cfn import synth_stack
from tests.support.settings import KARPENTER, KARPENTER_DRA, ODCR_ID, ODCR_PLACEMENT_GROUP

pytestmark = pytest.mark.e2e

SUBNET = "subnet-0123456789abcdef0"
SECURITY_GROUP = "sg-0123456789abcdef0"
RESERVATION = "cr-0123456789abcdef0"
NODE_ROLE = "gpu-pool-karpenter-node"


@pytest.fixture(scope="module")
def crds(cluster: Cluster) -> Cluster:
    return with_crds(cluster)


def _karpenter(**settings: Any):
    plan = plan_pool(PoolSettings(provisioner="karpenter", **settings), "pool").karpenter
    assert plan is not None
    return plan


def _objects(template: Template, kind: str) -> list[dict[str, Any]]:
    """The template's objects of `kind` with deploy-shaped values for its tokens."""
    return [o for m in manifests(template) for o in m.objects if o["kind"] == kind]


# -- the objects gpu-pool renders are accepted ------------------------------------------------


def test_a_capacity_block_pools_node_pool_and_node_class_are_accepted(crds):
    """Guards tests/unit/test_plan.py's capacity-block pool: a NodePool of reserved capacity
    only (no on-demand requirement value) and an EC2NodeClass selecting the block by id."""
    plan = _karpenter(
        instance_types=["p5.48xlarge"],
        zones=["us-east-1a"],
        capacity_reservation={"type": "capacity-block", "id": RESERVATION},
    )
    node_class = plan.ec2_node_class(
        role=NODE_ROLE, subnet_ids=[SUBNET], security_group_ids=[SECURITY_GROUP], tags={}
    )
    assert judge_strictly(crds.api, plan.node_pool()) == []
    assert judge_strictly(crds.api, node_class) == []


def test_an_odcr_pools_node_class_with_the_reservations_placement_group_is_accepted(crds):
    """Guards tests/unit/test_training_plan.py's ODCR pool: placementGroupSelector by a name
    with spaces and a '#', beside capacityReservationSelectorTerms."""
    pool = plan_pool(
        PoolSettings(
            provisioner="karpenter",
            instance_types=["p5.48xlarge"],
            zones=["us-east-1a"],
            capacity_reservation={"type": "odcr", "id": RESERVATION, "placement_group": "p5 pg #1"},
        )
    )
    assert pool.karpenter is not None
    node_class = pool.karpenter.ec2_node_class(
        role=NODE_ROLE,
        subnet_ids=[SUBNET],
        security_group_ids=[SECURITY_GROUP],
        tags={},
        placement_group=pool.capacity.reservation_placement_group,
    )
    assert node_class["spec"]["placementGroupSelector"] == {"name": "p5 pg #1"}
    assert judge_strictly(crds.api, node_class) == []


def test_a_raid0_pools_node_class_is_accepted(crds):
    """Guards tests/unit/test_instance_store.py: `instance_store: raid0` sets the
    EC2NodeClass's instanceStorePolicy RAID0, a value of the CRD's enum."""
    node_class = _karpenter(instance_types=["g6e.xlarge"], instance_store="raid0").ec2_node_class(
        "role", ["subnet-1"], ["sg-1"], {}
    )
    assert node_class["spec"]["instanceStorePolicy"] == "RAID0"
    assert judge_strictly(crds.api, node_class) == []


def test_each_karpenter_apps_node_pool_and_node_class_is_accepted(crds):
    """Guards tests/synth/test_karpenter.py's shared Karpenter app: each pool's NodePool and its
    EC2NodeClass with realistic deploy-time values (AL2023 and Bottlerocket, x86 and arm)."""
    manifests = {}
    for pool in synth_stack(KARPENTER).pools:
        plan = pool.plan.karpenter
        assert plan is not None
        node_class = plan.ec2_node_class(
            role=NODE_ROLE,
            subnet_ids=[SUBNET, "subnet-0fedcba9876543210"],
            security_group_ids=[SECURITY_GROUP],
            tags={"team": "ml"},
        )
        for manifest in (plan.node_pool(), node_class):
            manifests[(plan.name, manifest["kind"])] = manifest
    assert refusals(crds.api, manifests) == {}


def test_a_gpu_operator_pools_node_pool_is_accepted(crds, karpenter_operator_template):
    """Guards tests/synth/test_karpenter.py's Karpenter pool served by the GPU Operator: its
    NodePool as the template holds it (the operator's labels, the GPU and node limits)."""
    (node_pool,) = [
        o
        for o in _objects(karpenter_operator_template, "NodePool")
        if o["metadata"]["name"] == "gpu-pool-train"
    ]
    assert judge_strictly(crds.api, node_pool) == []


def test_the_dra_pools_node_pool_and_node_class_are_accepted(crds):
    """Guards tests/synth/test_karpenter_dra.py: the DRA pool's NodePool (its pool label) and
    its EC2NodeClass without networkInterfaces, planned from the shared Karpenter DRA app."""
    (plan,) = [
        p.karpenter for p in plan_pools(load_settings(KARPENTER_DRA, None)) if p.name == "dra"
    ]
    assert plan is not None
    node_class = plan.ec2_node_class(
        role=NODE_ROLE, subnet_ids=[SUBNET], security_group_ids=[SECURITY_GROUP], tags={}
    )
    assert judge_strictly(crds.api, plan.node_pool()) == []
    assert judge_strictly(crds.api, node_class) == []


def test_the_training_apps_reserved_efa_pool_is_accepted(crds, training_template):
    """Guards tests/synth/test_training.py's Karpenter ODCR pool with EFA: the NodePool with its
    on-demand fallback and the EC2NodeClass selecting the reservation, its placement group and
    the EFA security group, as the template holds them with deploy-shaped values."""
    (node_pool,) = _objects(training_template, "NodePool")
    (node_class,) = _objects(training_template, "EC2NodeClass")
    spec = node_class["spec"]
    assert spec["capacityReservationSelectorTerms"] == [{"id": ODCR_ID}]
    assert spec["placementGroupSelector"] == {"name": ODCR_PLACEMENT_GROUP}
    assert judge_strictly(crds.api, node_pool) == []
    assert judge_strictly(crds.api, node_class) == []


# -- the server refuses what Karpenter's CRDs forbid ------------------------------------------

REQUIREMENTS = ("spec", "template", "spec", "requirements")
UNCHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)


def _requirement(index: int, **change: Any) -> Callable[[dict[str, Any]], None]:
    return lambda m: m["spec"]["template"]["spec"]["requirements"][index].update(change)


def _label(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda m: m["spec"]["template"]["metadata"]["labels"].update({key: "a"})


REFUSALS = {
    "in-without-values": (
        _requirement(0, values=[]),
        [
            "spec.template.spec.requirements: Invalid value: requirements with operator 'In' "
            "must have a value defined"
        ],
    ),
    "gt-non-number": (
        _requirement(1, operator="Gt"),
        [
            "spec.template.spec.requirements: Invalid value: requirements operator 'Gt', 'Lt', "
            "'Gte', or 'Lte' must have a single positive integer value"
        ],
    ),
    "karpenter-label": (
        _label("karpenter.sh/x"),
        ['spec.template.metadata.labels: Invalid value: label domain "karpenter.sh" is restricted'],
    ),
    "hostname": (
        _label("kubernetes.io/hostname"),
        [
            'spec.template.metadata.labels: Invalid value: label "kubernetes.io/hostname" is '
            "restricted"
        ],
    ),
    "nested-limits": (
        lambda m: m["spec"].update(limits={"nvidia.com/gpu": {"max": "8"}}),
        [
            'NodePool in version "v1" cannot be handled as a NodePool: strict decoding error: '
            'unknown field "spec.limits.nvidia.com/gpu.max"'
        ],
    ),
    "bad-operator": (
        _requirement(0, operator="Has"),
        [
            'spec.template.spec.requirements[0].operator: Unsupported value: "Has": supported '
            'values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"',
            UNCHECKED,
        ],
    ),
}


@pytest.mark.parametrize(("change", "causes"), REFUSALS.values(), ids=REFUSALS.keys())
def test_the_server_refuses_a_node_pool_karpenters_crd_forbids(crds, change, causes):
    """The judging can fail: each rule broken once on the Karpenter app's first NodePool (which
    is accepted), with the API server's own causes. Karpenter 1.15's CRD defaults
    consolidateAfter to 0s, so a NodePool without it is no longer refused (1.14.1 required it)."""
    plan = synth_stack(KARPENTER).pools[0].plan.karpenter
    assert plan is not None
    node_pool = plan.node_pool()
    assert judge_strictly(crds.api, node_pool) == []
    change(node_pool)
    assert judge_strictly(crds.api, node_pool) == causes


# -- gpu-pool's settings take what the CRD takes ---------------------------------------------

DURATIONS = [
    "24h",
    "1h30m",
    "720h",
    "1h0m0s",
    "10s",
    "0s",
    "Never",
    "30d",
    "1.5h",
    "1ms",
    "-1h",
    "",
    "1H",
]
DURATION_FIELDS = {
    "expire_after": ("template", "spec", "expireAfter"),
    "termination_grace_period": ("template", "spec", "terminationGracePeriod"),
    "consolidate_after": ("disruption", "consolidateAfter"),
}


def _settings_take(setting: str, value: str) -> bool:
    try:
        PoolSettings(provisioner="karpenter", karpenter={setting: value})
    except ConfigError:
        return False
    return True


@pytest.mark.parametrize("setting", DURATION_FIELDS)
def test_duration_settings_take_exactly_what_the_node_pool_crd_takes(crds, setting):
    """gpu-pool's Karpenter durations (settings/pool.py KarpenterDuration and
    KarpenterDurationOrNever) accept a value exactly when the API server accepts the pool's
    NodePool carrying it in the field the setting renders to: whole h/m/s, Never only where the
    CRD allows it."""
    *parents, field = DURATION_FIELDS[setting]
    verdicts = {}
    for value in DURATIONS:
        node_pool = _karpenter(instance_types=["g6e.xlarge"]).node_pool()
        spec = node_pool["spec"]
        for name in parents:
            spec = spec[name]
        spec[field] = value
        verdicts[value] = (
            _settings_take(setting, value),
            judge_strictly(crds.api, node_pool) == [],
        )
    assert {v: taken for v, (taken, _) in verdicts.items()} == {
        v: accepted for v, (_, accepted) in verdicts.items()
    }
    # Both ways: some examples are refused, some accepted.
    assert {accepted for _, accepted in verdicts.values()} == {True, False}


LABEL_KEYS = [
    "karpenter.sh/team",
    "karpenter.sh/capacity-type",
    "karpenter.sh/nodepool",
    "mykarpenter.sh/x",
    "karpenter.sh.example.com/x",
    "team.karpenter.k8s.aws/x",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-tenancy",
    "kubernetes.io/hostname",
    "node-role.kubernetes.io/gpu",
    "example.com/team",
]


@pytest.mark.parametrize("key", LABEL_KEYS)
def test_the_label_rule_refuses_what_the_node_pool_crd_refuses(crds, key):
    """gpu-pool's label rule (model/karpenter_api.py karpenter_refuses) refuses a template
    label key exactly when the API server refuses a NodePool carrying it (the CRD's CEL rules);
    karpenter.k8s.aws/ec2nodeclass, which only the controller refuses, is a rule case of
    tests/unit/test_karpenter_checks.py."""
    node_pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-pool-gpu"},
        "spec": {
            "template": {
                "metadata": {"labels": {key: "a"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu-pool-gpu",
                    },
                    "requirements": [],
                },
            }
        },
    }
    assert karpenter_refuses(key) == (judge_strictly(crds.api, node_pool) != [])
