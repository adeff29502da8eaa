"""A customer key on node group and Karpenter pools, as synthesized: the grant that lets EC2
Auto Scaling's service-linked role launch the node groups' nodes (EC2 Auto Scaling user guide,
"Required AWS KMS key policy for use with encrypted volumes"), which every node group waits
for, and Karpenter's controller's use of the key, which its EC2NodeClass waits for. What the
roles may do with the key is simulated in test_iam_simulation.py."""

from __future__ import annotations

from gpu_pool.cdk.nodes.volume_key import RESOURCE_TYPE
from tests.support.cfn import only, render, resources, synth
from tests.support.settings import DEFAULT, KARPENTER, KMS_KEY, NODE_GROUP_KMS
from tests.support.volume_key import GUIDE_GRANT_OPERATIONS

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def test_the_node_groups_wait_for_the_service_linked_roles_grant_on_the_key():
    template = synth(NODE_GROUP_KMS)
    grant_id, grant = only(resources(template, RESOURCE_TYPE))
    props = grant["Properties"]
    assert props["KeyArn"] == KMS_KEY
    assert render(props["GranteePrincipal"]) == (
        "arn:<Ref:AWS::Partition>:iam::123456789012:role/aws-service-role/"
        "autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    )
    assert props["Operations"] == list(GUIDE_GRANT_OPERATIONS)
    nodegroups = resources(template, "AWS::EKS::Nodegroup")
    gpu = {k: r for k, r in nodegroups.items() if "SystemNodes" not in k}
    assert gpu and all(grant_id in r["DependsOn"] for r in gpu.values())


def test_no_grant_without_a_key():
    assert resources(synth(DEFAULT), RESOURCE_TYPE) == {}


def test_karpenters_node_class_waits_for_the_controllers_use_of_the_key():
    template = synth(KARPENTER)
    policies = {
        k: r
        for k, r in resources(template, "AWS::IAM::Policy").items()
        if k.startswith("KarpenterControllerRoleVolumeKey")
    }
    policy_id, policy = only(policies)
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == KMS_KEY
    assert statement["Condition"] == {
        # The partition's domain (AWS::URLSuffix: amazonaws.com.cn in China), not a literal.
        "StringEquals": {
            "kms:ViaService": {"Fn::Join": ["", ["ec2.us-east-1.", {"Ref": "AWS::URLSuffix"}]]}
        }
    }
    # The pool with the key (rocket) waits for it, as for the rest of the installation.
    waiting = [
        k for k, r in resources(template, MANIFEST).items() if policy_id in r.get("DependsOn", [])
    ]
    assert any(k.startswith("GpuPoolRocketNodeClass") for k in waiting)
