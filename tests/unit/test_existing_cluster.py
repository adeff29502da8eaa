"""#47: an existing cluster given by its name: what its lookup's answer fills into the settings
(hand-set fields win, the cluster's version always), and the rules about what it found, each
with its exact message."""

from __future__ import annotations

from datetime import date

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.checks.app import creatable_minors
from gpu_pool.plan.existing_cluster import ClusterFacts, placeholder_facts, with_cluster_facts
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import load_settings
from tests.support.rules import documented

# The guide's situation: a cluster named inference, one GPU pool.
GUIDE = {
    "account": "123456789012",
    "region": "us-east-1",
    "cluster": {"name": "inference", "existing": True, "kubernetes_version": "1.35"},
    "pool": {"instance_types": ["g6e.xlarge"]},
}
# The lookup's answer (gpu_pool/lookups/eks_cluster.py): a 1.33 cluster with private subnets in two
# zones and neither agent add-on.
ANSWER = {
    "name": "inference",
    "version": "1.33",
    "vpcId": "vpc-0123456789abcdef0",
    "privateSubnets": {
        "us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"],
        "us-east-1b": ["subnet-0bbbbbbbbbbbbbbbb"],
    },
    "clusterSecurityGroupId": "sg-0123456789abcdef0",
    "endpointPublicAccess": True,
    "endpointPrivateAccess": True,
    "authenticationMode": "API_AND_CONFIG_MAP",
    "addons": ["coredns", "kube-proxy", "vpc-cni"],
}


def _facts(**changed):
    return ClusterFacts.from_answer({**ANSWER, **changed})


def _findings(settings, facts):
    loaded = with_cluster_facts(load_settings(settings, None), facts)
    found = check_settings(loaded, plan_pools(loaded), cluster_facts=facts).all()
    return [("E" if f.error else "W", str(f)) for f in documented(found)]


def test_the_cluster_gives_what_the_settings_leave_unset():
    filled = with_cluster_facts(load_settings(GUIDE, None), _facts())
    existing = filled.cluster.existing
    assert filled.cluster.kubernetes_version == "1.33"
    assert existing.subnets_by_zone == {
        "us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"],
        "us-east-1b": ["subnet-0bbbbbbbbbbbbbbbb"],
    }
    assert existing.cluster_security_group_id == "sg-0123456789abcdef0"
    # Neither add-on is installed: the stack creates both.
    assert (existing.pod_identity_agent, existing.node_monitoring_agent) == (True, True)


def test_hand_set_fields_win_over_the_lookup():
    settings = {
        **GUIDE,
        "cluster": {
            **GUIDE["cluster"],
            "existing": {
                "subnets_by_zone": {"us-east-1c": ["subnet-0cccccccccccccccc"]},
                "cluster_security_group_id": "sg-0fedcba9876543210",
                "node_monitoring_agent": False,
                "pod_identity_agent": False,
            },
        },
    }
    facts = _facts(addons=["eks-pod-identity-agent"])
    existing = with_cluster_facts(load_settings(settings, None), facts).cluster.existing
    assert existing.subnets_by_zone == {"us-east-1c": ["subnet-0cccccccccccccccc"]}
    assert existing.cluster_security_group_id == "sg-0fedcba9876543210"
    assert (existing.pod_identity_agent, existing.node_monitoring_agent) == (False, False)


def test_installed_agents_are_not_created_again():
    facts = _facts(addons=["eks-node-monitoring-agent", "eks-pod-identity-agent"])
    existing = with_cluster_facts(load_settings(GUIDE, None), facts).cluster.existing
    assert (existing.pod_identity_agent, existing.node_monitoring_agent) == (False, False)


def test_a_1_33_cluster_never_gets_the_settings_newer_minor():
    """cdk.json's 1.35 is a new cluster's: node groups, charts and the autoscaler image follow
    the control plane's 1.33 (EKS refuses a node group newer than its control plane)."""
    filled = with_cluster_facts(load_settings(GUIDE, None), _facts())
    assert filled.cluster.kubernetes_version == "1.33"
    assert _findings(GUIDE, _facts()) == []


def test_placeholders_are_the_settings_version_and_the_pools_zones():
    settings = {**GUIDE, "pool": {**GUIDE["pool"], "zones": ["us-east-1b"]}}
    facts = placeholder_facts(load_settings(settings, None))
    assert facts.placeholder
    assert facts.version == "1.35"
    assert dict(facts.private_subnets) == {"us-east-1b": ("subnet-00000000",)}


CASES = {
    "a-minor-gpu-pool-pins-nothing-for": (
        GUIDE,
        {"version": "1.31"},
        [
            (
                "E",
                "cluster.kubernetes_version: '1.31' is not supported; choose one of "
                f"{', '.join(creatable_minors(date.today()))} (an existing cluster's is its "
                "control plane's: upgrade inference to one)",
            )
        ],
    ),
    "config-map-only": (
        GUIDE,
        {"authenticationMode": "CONFIG_MAP"},
        [
            (
                "E",
                "cluster.existing: inference authenticates only through the aws-auth ConfigMap "
                "(DescribeCluster accessConfig.authenticationMode CONFIG_MAP, cached in "
                "cdk.context.json), so the stack's kubectl provider cannot be given access with "
                "an access entry: allow access entries with `aws eks update-cluster-config "
                "--name inference --region us-east-1 --access-config "
                "authenticationMode=API_AND_CONFIG_MAP` (the ConfigMap keeps working beside "
                "them; there is no way back), then reset the cluster's entry (`cdk context "
                "--reset`) and synthesize again",
            )
        ],
    ),
    "no-private-subnet": (
        GUIDE,
        {"privateSubnets": {}},
        [
            (
                "E",
                "cluster.existing.subnets_by_zone: every subnet of inference "
                "(vpc-0123456789abcdef0) routes to an internet gateway (DescribeSubnets, "
                "DescribeRouteTables; cached in cdk.context.json), and GPU nodes go into "
                "private subnets only: set subnets_by_zone to private subnets of that VPC",
            )
        ],
    ),
    "the-cloudwatch-add-on-already-there": (
        {**GUIDE, "metrics": {"gpu": "cloudwatch"}},
        {"addons": ["amazon-cloudwatch-observability", "eks-pod-identity-agent"]},
        [
            (
                "E",
                "metrics.gpu: cloudwatch, and inference has the amazon-cloudwatch-observability "
                "add-on already (ListAddons, cached in cdk.context.json): the stack would "
                "create it again, which EKS refuses, and the deploy rolls back: set "
                "metrics.gpu: none and keep yours",
            )
        ],
    ),
    "no-pod-identity-agent-and-told-not-to-create-it": (
        {
            **GUIDE,
            "cluster": {**GUIDE["cluster"], "existing": {"pod_identity_agent": False}},
        },
        {},
        [
            (
                "E",
                "cluster.existing.pod_identity_agent: false, and inference has no "
                "eks-pod-identity-agent add-on (ListAddons, cached in cdk.context.json), which "
                "hands Cluster Autoscaler and Karpenter their AWS credentials: remove the "
                "setting (the stack creates the add-on) or set it true",
            )
        ],
    ),
}


@pytest.mark.parametrize(("settings", "answer", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, answer, expected):
    assert _findings(settings, _facts(**answer)) == expected


def test_a_provider_of_ones_own_needs_no_access_entry():
    settings = {
        **GUIDE,
        "cluster": {
            **GUIDE["cluster"],
            "existing": {
                "kubectl_provider_service_token": (
                    "arn:aws:lambda:us-east-1:123456789012:function:k"
                ),
                "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/k",
            },
        },
    }
    assert _findings(settings, _facts(authenticationMode="CONFIG_MAP")) == []


def test_placeholders_judge_nothing():
    facts = placeholder_facts(load_settings(GUIDE, None))
    assert _findings(GUIDE, facts) == []
