"""gpu-pool's other custom resources judged by the real API server (the pinned 1.36 patch), as
kubectl sends an object (strict field validation: tests/e2e/verdicts.py): EKS Auto Mode's
NodePool (karpenter.sh/v1, by Karpenter 1.15.0's CRD) and NodeClass (by the schema the suite
writes from the EKS user guide, tests/fixtures/eks-auto-mode), and the NodeConfig node groups
hand nodeadm (by its CRD at the tag tests/fixtures/nodeadm-v20260724 names). The objects are
built as the unit and synth tests build them, which keep their exact content; the refusals are
the server's own messages, so the judging is seen failing.
"""

from __future__ import annotations

import email
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpu_pool.plan.instance_store import local_storage_node_config
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings
from tests.e2e.harness.cluster import Cluster
from tests.e2e.verdicts import judge_strictly, refusals, with_crds
from tests.support.cfn import synth_stack
from tests.support.settings import AUTO_MODE

pytestmark = pytest.mark.e2e

SUBNET = "subnet-0123456789abcdef0"
SECURITY_GROUP = "sg-0123456789abcdef0"
UNCHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)


@pytest.fixture(scope="module")
def crds(cluster: Cluster) -> Cluster:
    return with_crds(cluster)


# -- EKS Auto Mode ---------------------------------------------------------------------------


def test_an_auto_mode_node_class_with_disk_key_subnets_and_tags_is_accepted(crds):
    """Guards tests/unit/test_plan_renders.py's Auto Mode NodeClass: ephemeralStorage with a
    KMS key, two subnets, the pool's tags."""
    plan = plan_pool(
        PoolSettings(
            provisioner="auto-mode",
            name="infer",
            disk_size_gib=120,
            volume_kms_key_arn="arn:aws:kms:us-west-2:123456789012:key/k",
        ),
        "pool",
    ).auto_mode
    assert plan is not None
    node_class = plan.node_class("role", ["subnet-1", "subnet-2"], ["sg-1"], {"team": "ml"})
    assert node_class["spec"]["ephemeralStorage"]["kmsKeyID"].startswith("arn:aws:kms:")
    assert judge_strictly(crds.api, node_class) == []


def test_each_auto_mode_apps_node_pool_and_node_class_is_accepted(crds):
    """Guards tests/synth/test_auto_mode.py's shared Auto Mode app: each pool's NodePool and
    NodeClass with realistic deploy-time values."""
    manifests = {}
    for pool in synth_stack(AUTO_MODE).pools:
        plan = pool.plan.auto_mode
        assert plan is not None
        node_class = plan.node_class(
            role="gpu-pool-auto-node",
            subnet_ids=[SUBNET],
            security_group_ids=[SECURITY_GROUP],
            tags={"team": "ml"},
        )
        for manifest in (plan.node_pool(), node_class):
            manifests[(plan.name, manifest["kind"])] = manifest
    assert refusals(crds.api, manifests) == {}


NODE_CLASS_REFUSALS: dict[str, tuple[Callable[[dict[str, Any]], Any], list[str]]] = {
    "no-role": (lambda m: m["spec"].pop("role"), ["spec.role: Required value", UNCHECKED]),
    "size-unit": (
        lambda m: m["spec"]["ephemeralStorage"].update(size="200GB"),
        [
            'spec.ephemeralStorage.size: Invalid value: "200GB": spec.ephemeralStorage.size in '
            "body should match '^[1-9][0-9]*(Gi|G|Ti|T)$'"
        ],
    ),
    "named-default": (
        lambda m: m["metadata"].update(name="default"),
        ["<nil>: Invalid value: a custom NodeClass may not be named default"],
    ),
    "ec2nodeclass-field": (
        lambda m: m["spec"].update(blockDeviceMappings=[]),
        [
            'NodeClass in version "v1" cannot be handled as a NodeClass: strict decoding error: '
            'unknown field "spec.blockDeviceMappings"'
        ],
    ),
}


@pytest.mark.parametrize(
    ("change", "causes"), NODE_CLASS_REFUSALS.values(), ids=NODE_CLASS_REFUSALS.keys()
)
def test_the_server_refuses_a_node_class_the_guide_forbids(crds, change, causes):
    """The judging can fail: what the EKS user guide's NodeClass forbids (no role, a size in
    another unit, the name default, an EC2NodeClass field), each broken once on the Auto Mode
    app's first NodeClass (which is accepted), with the API server's own causes."""
    plan = synth_stack(AUTO_MODE).pools[0].plan.auto_mode
    assert plan is not None
    node_class = plan.node_class("r", [SUBNET], [SECURITY_GROUP], {})
    assert judge_strictly(crds.api, node_class) == []
    change(node_class)
    assert judge_strictly(crds.api, node_class) == causes


# -- nodeadm's NodeConfig --------------------------------------------------------------------


def _named(config: dict[str, Any]) -> dict[str, Any]:
    """nodeadm reads a NodeConfig from the user data, where it has no name (the API reference's
    examples have none); the API server wants one for any object it judges."""
    return {**config, "metadata": {"name": "gpu-pool"}}


def test_the_raid0_node_config_is_accepted(crds):
    """Guards tests/unit/test_instance_store.py: `instance_store: raid0`'s NodeConfig
    (spec.instance.localStorage.strategy RAID0) is nodeadm's own field and value."""
    assert judge_strictly(crds.api, _named(local_storage_node_config())) == []


def test_the_ultraserver_launch_templates_node_config_is_accepted(crds, ultraserver_template):
    """Guards tests/synth/test_ultraserver.py: the NodeConfig in the MIME part of type
    application/node.eks.aws of the UltraServer pool's launch template, as synthesized."""
    (data,) = [
        r["Properties"]["LaunchTemplateData"]
        for k, r in ultraserver_template.find_resources("AWS::EC2::LaunchTemplate").items()
        if k.startswith("GpuPoolGb200")
    ]
    (part,) = email.message_from_string(data["UserData"]["Fn::Base64"]).get_payload()
    config = yaml.safe_load(part.get_payload())
    assert config == local_storage_node_config()
    assert judge_strictly(crds.api, _named(config)) == []


def test_the_server_refuses_a_strategy_nodeadm_does_not_know(crds):
    """The judging can fail: nodeadm's CRD lists the strategies its API reference lists, and
    the API server names them; the same NodeConfig without a name is refused too."""
    wrong = _named(local_storage_node_config())
    wrong["spec"] = {"instance": {"localStorage": {"strategy": "RAID5"}}}
    assert judge_strictly(crds.api, wrong) == [
        'spec.instance.localStorage.strategy: Unsupported value: "RAID5": supported values: '
        '"RAID0", "RAID10", "Mount"'
    ]
    assert judge_strictly(crds.api, local_storage_node_config()) == [
        "metadata.name: Required value: name or generateName is required"
    ]
