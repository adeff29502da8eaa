"""#47: the existing-cluster lookup the project's CDK CLI plugin answers
(gpu_pool/lookups/eks_cluster.py, run by cdk-plugin/index.js), against moto's EKS and EC2 with the
documented shapes moto leaves out (tests/support/eks_world.py): its answer, the add-ons it
counts, its errors as the CLI receives them."""

from __future__ import annotations

import json
import os
import subprocess

import boto3
import pytest

from gpu_pool.lookups.eks_cluster import describe_cluster
from gpu_pool.lookups.session import LookupFailed
from tests.support.eks_world import SECURITY_GROUP, looked_up_cluster
from tests.support.looked_up import ACCOUNT, REGION
from tests.support.paths import ROOT

NODE = ROOT / "node_modules" / ".bin" / "node"


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
    driver = """
const plugin = require(process.argv[1]);
const providers = {};
plugin.init({ registerContextProviderAlpha: (name, provider) => { providers[name] = provider; } });
providers['gpu-pool-eks-cluster'].getValue(JSON.parse(process.argv[2])).then(
  (value) => process.stdout.write(JSON.stringify({ value })),
  (err) => process.stdout.write(JSON.stringify({ error: err.message })),
);
"""
    props = {"account": ACCOUNT, "region": REGION, "clusterName": "inference"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        HOME=str(tmp_path),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        PYTHONPATH=str(ROOT),
        PATH=os.pathsep.join([str(ROOT / ".venv" / "bin"), env["PATH"]]),
    )
    done = subprocess.run(
        [str(NODE), "-e", driver, str(ROOT / "cdk-plugin"), json.dumps(props)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == {
        "error": "gpu-pool: cannot look up the EKS cluster inference of us-east-1 for account "
        "123456789012: no AWS credentials (environment, AWS_PROFILE or ~/.aws) for account "
        "123456789012; the CDK CLI's --profile does not reach context provider plugins: set "
        "AWS_PROFILE"
    }
