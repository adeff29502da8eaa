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
from tests.support.eks_world import NONE, SECURITY_GROUP, looked_up_cluster
from tests.support.looked_up import ACCOUNT, REGION
from tests.support.plugin import NODE, ask_without_credentials


def test_the_lookup_answers_the_clusters_facts(aws_api):
    name = "facts-" + os.urandom(4).hex()
    vpc, subnet, answer = looked_up_cluster(name)
    assert answer == {
        "name": name,
        "version": "1.33",
        "vpcId": vpc,
        # The public subnet (us-east-1c) routes to the internet gateway: not a node's. The one
        # in us-east-1a routes through the NAT gateway on a table of its own; the one in
        # us-east-1b has none: the VPC's main table, which routes through the NAT gateway too.
        "privateSubnets": {
            f"{REGION}a": [subnet[f"{REGION}a"]],
            f"{REGION}b": [subnet[f"{REGION}b"]],
        },
        "isolatedSubnets": {},
        "clusterSecurityGroupId": SECURITY_GROUP,
        "endpointPublicAccess": True,
        "endpointPrivateAccess": True,
        "publicAccessCidrs": ["0.0.0.0/0"],
        "authenticationMode": "API_AND_CONFIG_MAP",
        "autoMode": False,
        "addons": ["vpc-cni"],
        "addonOwners": {},
    }


def test_an_internet_route_on_the_main_table_makes_its_subnets_public(aws_api):
    """The main table is every subnet's without a table of its own (VPC user guide, "Route
    tables"): its internet route makes us-east-1b public, not a node's."""
    _, subnet, answer = looked_up_cluster("main-" + os.urandom(4).hex(), main_table="igw")
    assert answer["privateSubnets"] == {f"{REGION}a": [subnet[f"{REGION}a"]]}
    assert answer["isolatedSubnets"] == {}


def test_a_subnet_without_a_default_route_is_isolated(aws_api):
    """No NAT, no transit gateway: the subnet is still private, and said to be isolated; so is
    one on a main table without a default route."""
    _, subnet, answer = looked_up_cluster(
        "isolated-" + os.urandom(4).hex(), egress_a=NONE, main_table=NONE
    )
    both = {f"{REGION}a": [subnet[f"{REGION}a"]], f"{REGION}b": [subnet[f"{REGION}b"]]}
    assert answer["privateSubnets"] == both
    assert answer["isolatedSubnets"] == both


def test_a_cluster_made_before_access_entries_is_config_map_only(aws_api):
    """DescribeCluster answers no accessConfig for such a cluster."""
    *_, answer = looked_up_cluster("old-" + os.urandom(4).hex(), mode=None)
    assert answer["authenticationMode"] == "CONFIG_MAP"


def test_the_public_endpoints_allowed_addresses_are_answered(aws_api):
    *_, answer = looked_up_cluster(
        "cidrs-" + os.urandom(4).hex(), public_cidrs=["203.0.113.0/24", "198.51.100.7/32"]
    )
    assert answer["publicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.7/32"]


def test_a_deleting_addon_is_gone_and_a_failed_one_still_exists(aws_api):
    """An add-on in CREATE_FAILED is still in the cluster: creating it again is refused
    (ResourceInUseException), so it counts; one being deleted does not."""
    *_, answer = looked_up_cluster(
        "addons-" + os.urandom(4).hex(),
        addons={
            "eks-pod-identity-agent": "ACTIVE",
            "eks-node-monitoring-agent": "DELETING",
            "amazon-cloudwatch-observability": "CREATE_FAILED",
        },
    )
    assert answer["addons"] == ["amazon-cloudwatch-observability", "eks-pod-identity-agent"]


def test_the_addons_a_gpu_pool_stack_created_name_that_stack(aws_api):
    """Looked up again after a deploy, the agents the stack created stay the stack's, and are
    the cluster's for any other stack (plan/existing_cluster.py ClusterFacts.from_answer)."""
    *_, answer = looked_up_cluster(
        "owned-" + os.urandom(4).hex(),
        addons={
            "eks-pod-identity-agent": "ACTIVE GpuPool",
            "eks-node-monitoring-agent": "ACTIVE Training",
            "vpc-cni": "ACTIVE",
        },
    )
    assert answer["addons"] == ["eks-node-monitoring-agent", "eks-pod-identity-agent", "vpc-cni"]
    assert answer["addonOwners"] == {
        "eks-node-monitoring-agent": "Training",
        "eks-pod-identity-agent": "GpuPool",
    }


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
