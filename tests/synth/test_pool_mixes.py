"""A few synthesized draws of tests/unit/test_pool_mixes.py's clusters (#48 item 10), for the
invariants only the template shows: the agent add-on where a node group or Karpenter pool is,
a grant for every customer key of a node-group pool, and no Local Zone subnet given to the
cluster. Two draws: each is a synth of several seconds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from gpu_pool.cdk.nodes.volume_key import RESOURCE_TYPE
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.model.aws_names import is_local_zone
from tests.support.cfn import unvalidated_app
from tests.support.looked_up import LOOKUP
from tests.support.pool_mixes import cluster, valid

pytestmark = pytest.mark.synth


def _of_type(template: dict[str, Any], type_name: str) -> dict[str, Any]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_name}


# The same two draws every run (derandomize): a synth each, in every CI run.
@settings(max_examples=2, deadline=None, derandomize=True)
@given(app=cluster())
def test_a_synthesized_mix_has_the_agent_its_grants_and_no_local_zone_in_the_cluster(app):
    app_settings, plans = valid(app)
    synth = unvalidated_app(context=LOOKUP)
    GpuPoolStack(synth, "GpuPool", settings=app_settings)
    template = synth.synth().get_stack_by_name("GpuPool").template
    addons = [r["Properties"]["AddonName"] for r in _of_type(template, "AWS::EKS::Addon").values()]
    agent = any(p.provisioner != "auto-mode" for p in plans)
    assert addons.count("eks-node-monitoring-agent") == (1 if agent else 0)
    keys = {
        p.settings.volume_kms_key_arn
        for p in plans
        if p.provisioner == "cluster-autoscaler" and p.settings.volume_kms_key_arn
    }
    grants = {r["Properties"]["KeyArn"] for r in _of_type(template, RESOURCE_TYPE).values()}
    assert grants == keys
    subnets = _of_type(template, "AWS::EC2::Subnet")
    local = {k for k, r in subnets.items() if is_local_zone(r["Properties"]["AvailabilityZone"])}
    (eks_cluster,) = _of_type(template, "AWS::EKS::Cluster").values()
    given_subnets = eks_cluster["Properties"]["ResourcesVpcConfig"]["SubnetIds"]
    assert [s for s in given_subnets if s.get("Ref") in local] == []
