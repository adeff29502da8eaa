"""Node repair as synthesized (issue #36's acceptance): a default GPU pool, a Karpenter pool and
a Capacity Block pool get the node monitoring agent add-on, NodeRepairConfig Enabled on every
GPU node group, valid against CloudFormation's registry schema of AWS::EKS::Nodegroup
(tests/fixtures/eks-nodegroup-schema, vendored unchanged), and Karpenter's nodeRepair gate."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from gpu_pool.model.labels import POOL_LABEL
from gpu_pool.model.versions import NODE_MONITORING_AGENT_ADDON_VERSION
from tests.support.cfn import helm_values, resources, synth
from tests.support.paths import FIXTURES
from tests.support.settings import EXISTING, EXISTING_WITH_AGENT, REPAIR_OFF

SCHEMA = json.loads((FIXTURES / "eks-nodegroup-schema" / "aws-eks-nodegroup.json").read_text())
# The registry schema's NodeRepairConfig definition, its $refs resolved within the schema.
NODE_REPAIR_CONFIG = {
    "$ref": "#/definitions/NodeRepairConfig",
    "definitions": SCHEMA["definitions"],
}


def gpu_nodegroups(template) -> dict[str, dict]:
    return {
        name: r["Properties"]
        for name, r in resources(template, "AWS::EKS::Nodegroup").items()
        if POOL_LABEL in r["Properties"].get("Labels", {})
    }


def agent_addons(template) -> list[dict]:
    return [
        r["Properties"]
        for r in resources(template, "AWS::EKS::Addon").values()
        if r["Properties"]["AddonName"] == "eks-node-monitoring-agent"
    ]


def karpenter_gates(template) -> dict:
    (chart,) = [
        r
        for r in resources(template, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Release"] == "karpenter"
    ]
    return helm_values(chart)["settings"].get("featureGates", {})  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["default_template", "karpenter_template", "training_template"])
def test_the_agent_add_on_at_the_pin_tolerating_every_taint(name, request):
    (addon,) = agent_addons(request.getfixturevalue(name))
    assert addon["AddonVersion"] == NODE_MONITORING_AGENT_ADDON_VERSION
    assert json.loads(addon["ConfigurationValues"]) == {
        "dcgmAgent": {"tolerations": [{"operator": "Exists"}]}
    }
    # No IAM role: the agent calls no AWS API (cdk/gpu_software/node_health.py).
    assert "ServiceAccountRoleArn" not in addon and "PodIdentityAssociations" not in addon


@pytest.mark.parametrize("name", ["default_template", "training_template"])
def test_every_gpu_node_group_repairs_within_cloudformations_schema(name, request):
    groups = gpu_nodegroups(request.getfixturevalue(name))
    assert groups
    for props in groups.values():
        config = props["NodeRepairConfig"]
        jsonschema.validate(config, NODE_REPAIR_CONFIG)
        assert config["Enabled"] is True
        # No threshold of gpu-pool's: EKS's own pause applies (plan/repair.py).
        assert "MaxUnhealthyNodeThresholdPercentage" not in config
        assert "MaxUnhealthyNodeThresholdCount" not in config
        assert config["MaxParallelNodesRepairedCount"] == 1
        assert {
            "NodeMonitoringCondition": "AcceleratedHardwareReady",
            "NodeUnhealthyReason": "NvidiaXID64Error",
            "MinRepairWaitTimeMins": 10,
            "RepairAction": "Reboot",
        } in config["NodeRepairConfigOverrides"]


def test_the_capacity_block_pool_repairs(training_template):
    # Its node group pins the block's type in its launch template, so it has no InstanceTypes.
    (block,) = [
        p for p in gpu_nodegroups(training_template).values() if p["Labels"][POOL_LABEL] == "train"
    ]
    assert block["NodeRepairConfig"]["Enabled"] is True


@pytest.mark.parametrize("name", ["karpenter_template", "training_template"])
def test_karpenter_node_repair_gate_on(name, request):
    assert karpenter_gates(request.getfixturevalue(name)) == {"nodeRepair": True}


def test_repair_off_renders_enabled_false_and_no_gate():
    template = synth(REPAIR_OFF)
    for props in gpu_nodegroups(template).values():
        assert props["NodeRepairConfig"] == {"Enabled": False}
    assert karpenter_gates(template) == {}


def test_an_imported_cluster_gets_the_agent_only_when_asked(existing_template):
    assert agent_addons(existing_template) == []
    (addon,) = agent_addons(synth(EXISTING_WITH_AGENT))
    assert addon["ClusterName"] == EXISTING["cluster"]["name"]


def test_the_first_deploy_with_repair_replaces_and_rolls_no_node_group(training_template):
    """A stack deployed before repair (its node groups without NodeRepairConfig, no agent
    add-on): `gpu-pool replacements` (CloudFormation's create-only properties) names nothing."""
    from gpu_pool.cli.commands.replacements.changes import nodegroup_losses, nodegroup_rolls

    new = training_template.to_json()
    deployed = copy.deepcopy(new)
    for resource in deployed["Resources"].values():
        if resource["Type"] == "AWS::EKS::Nodegroup":
            resource["Properties"].pop("NodeRepairConfig", None)
    assert nodegroup_losses(deployed, new) == []
    assert nodegroup_rolls(deployed, new) == []
