"""#47: the existing-cluster lookup the project's CDK CLI plugin answers
(gpu_pool/lookups/eks_cluster.py, run by cdk-plugin/index.js), against moto's EKS and EC2 with the
documented shapes moto leaves out (tests/support/eks_world.py): its answer, the add-ons it
counts, its errors as the CLI receives them."""

from __future__ import annotations

import os

import boto3
import pytest

from gpu_pool.lookups.eks_cluster import describe_cluster
from gpu_pool.lookups.session import LookupFailed
from tests.support.eks_world import SECURITY_GROUP, looked_up_cluster
from tests.support.looked_up import ACCOUNT, REGION
from tests.support.plugin import NODE, ask_without_credentials


def test_the_lookup_answers_the_clusters_facts(aws_api):
    name = "facts-" + os.urandom(4).hex()
    vpc, subnet, answer = looked_up_cluster(name)
    assert answer == {
        "name": name,
        "version": "1.33",
        "vpcId": vpc,
        # The public subnet (us-east-1c) routes to the internet gateway: not a node's; the one
        # in us-east-1b has no route table of its own: the VPC's main one, without a gateway.
        "privateSubnets": {
            f"{REGION}a": [subnet[f"{REGION}a"]],
            f"{REGION}b": [subnet[f"{REGION}b"]],
        },
        "clusterSecurityGroupId": SECURITY_GROUP,
        "endpointPublicAccess": True,
        "endpointPrivateAccess": True,
        "authenticationMode": "API_AND_CONFIG_MAP",
        "addons": ["vpc-cni"],
    }


def test_a_failed_or_deleting_addon_is_not_installed(aws_api):
    *_, answer = looked_up_cluster(
        "addons-" + os.urandom(4).hex(),
        addons={"eks-pod-identity-agent": "ACTIVE", "eks-node-monitoring-agent": "DELETING"},
    )
    assert answer["addons"] == ["eks-pod-identity-agent"]


def test_an_addon_a_gpu_pool_stack_created_is_not_the_clusters_own(aws_api):
    """Looked up again after a deploy, the agents the stack created stay the stack's: taken as
    the cluster's own, the stack would stop creating them and CloudFormation delete them."""
    *_, answer = looked_up_cluster(
        "owned-" + os.urandom(4).hex(),
        addons={
            "eks-pod-identity-agent": "ACTIVE gpu-pool",
            "eks-node-monitoring-agent": "ACTIVE gpu-pool",
            "vpc-cni": "ACTIVE",
        },
    )
    assert answer["addons"] == ["vpc-cni"]


def test_a_cluster_eks_does_not_have_is_the_lookups_error(aws_api):
    with pytest.raises(LookupFailed) as err:
        describe_cluster(boto3.Session(region_name=REGION), "nowhere")
    assert str(err.value) == (
        "EKS has no cluster nowhere in us-east-1: check cluster.name and the stack's region"
    )


@pytest.mark.skipif(not NODE.exists(), reason="pinned Node.js not installed")
def test_the_plugin_answers_the_cluster_provider_through_the_module(tmp_path):
    """The plugin registers `gpu-pool-eks-cluster` and runs gpu_pool.lookups.eks_cluster: without
    credentials its one-line error is the lookup's error (the app's GP-REGION-08 quotes it)."""
    props = {"account": ACCOUNT, "region": REGION, "clusterName": "inference"}
    assert ask_without_credentials(tmp_path, "gpu-pool-eks-cluster", props) == {
        "error": "gpu-pool: cannot look up the EKS cluster inference of us-east-1 for account "
        "123456789012: no AWS credentials (environment, AWS_PROFILE or ~/.aws) for account "
        "123456789012; the CDK CLI's --profile does not reach context provider plugins: set "
        "AWS_PROFILE"
    }
