"""#53: a node group this deploy creates on an existing cluster has the cluster's version, or
`gpu-pool replacements` (./dev deploy's guard) refuses the deploy before CloudFormation fails
on it: EKS CreateNodegroup takes the cluster's version only, and the version in the template is
the cluster's lookup cached before the control plane moved."""

from __future__ import annotations

import copy
import json

import boto3
import pytest
from botocore.stub import Stubber

from gpu_pool.cli.commands.replacements.changes import nodegroup_creations
from gpu_pool.cli.main import main
from tests.support.cfn import synth, write_assembly
from tests.support.settings import EXISTING

ENVIRONMENT = "aws://123456789012/eu-west-1"


@pytest.fixture(scope="module")
def existing_template():
    """The existing cluster's stack: its pool's node group names the cluster literally, at
    the settings' version (a hand-set cluster: nothing looked up)."""
    return synth({**EXISTING, "cluster": {**EXISTING["cluster"], "kubernetes_version": "1.34"}})


def _without_nodegroups(template):
    deployed = copy.deepcopy(template)
    deployed["Resources"] = {
        k: r for k, r in template["Resources"].items() if r["Type"] != "AWS::EKS::Nodegroup"
    }
    return deployed


def _replacements(tmp_path, deployed, new, cluster_version):
    out = write_assembly(tmp_path, new, ENVIRONMENT)
    cloudformation = boto3.client("cloudformation", region_name="eu-west-1")
    eks = boto3.client("eks", region_name="eu-west-1")
    with Stubber(cloudformation) as cf_stub, Stubber(eks) as eks_stub:
        cf_stub.add_response(
            "get_template",
            {"TemplateBody": json.dumps(deployed)},
            {"StackName": "GpuPool", "TemplateStage": "Original"},
        )
        if cluster_version is not None:
            eks_stub.add_response(
                "describe_cluster",
                {"cluster": {"name": "platform-prod", "version": cluster_version}},
                {"name": "platform-prod"},
            )
        clients = {"cloudformation": cloudformation, "eks": eks}
        code = main(["replacements", "--cdk-out", str(out), "--yes"], aws=clients.get)
        eks_stub.assert_no_pending_responses()
    return code


def test_a_new_group_of_an_older_minor_than_the_cluster_is_refused(tmp_path, capsys, existing_template):
    new = existing_template.to_json()
    ((group, cluster, version),) = nodegroup_creations(_without_nodegroups(new), new)
    assert (cluster, version) == ("platform-prod", "1.34")
    assert _replacements(tmp_path, _without_nodegroups(new), new, "1.35") == 2
    assert capsys.readouterr().err == (
        f"gpu-pool: replacements: GpuPool creates node group {group} with Kubernetes 1.34, and "
        "cluster platform-prod runs 1.35: EKS creates node groups of the cluster's version "
        "only, so the deploy would fail and roll back. The version comes from the cluster's "
        "lookup cached in cdk.context.json, taken before the control plane moved: look it up "
        'again (cdk context --reset "plugin:account=123456789012:clusterName=platform-prod:'
        'pluginName=gpu-pool-eks-cluster:region=eu-west-1"), synthesize and deploy; the '
        "stack's other node groups then move to it too\n"
    )


def test_a_new_group_of_the_clusters_minor_deploys(tmp_path, existing_template):
    new = existing_template.to_json()
    assert _replacements(tmp_path, _without_nodegroups(new), new, "1.34") == 0


def test_a_group_that_stays_is_not_asked_about(tmp_path, existing_template):
    """A deployed group keeps the version it has (EKS lets it lag the control plane): only the
    groups a deploy creates are held to the cluster's."""
    new = existing_template.to_json()
    assert nodegroup_creations(new, new) == []
    assert _replacements(tmp_path, new, new, None) == 0


def test_a_replaced_group_is_held_to_the_clusters_version_too(tmp_path, existing_template):
    """A create-only property changed (the capacity type): CloudFormation creates the group
    anew, so EKS judges its version as it does a new group's."""
    new = existing_template.to_json()
    deployed = copy.deepcopy(new)
    for resource in deployed["Resources"].values():
        if resource["Type"] == "AWS::EKS::Nodegroup":
            resource["Properties"]["CapacityType"] = "SPOT"
    assert len(nodegroup_creations(deployed, new)) == 1
    assert _replacements(tmp_path, deployed, new, "1.36") == 2
