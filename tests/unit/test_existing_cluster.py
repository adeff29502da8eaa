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
    "isolatedSubnets": {},
    "endpointPublicAccess": True,
    "endpointPrivateAccess": True,
    "publicAccessCidrs": ["0.0.0.0/0"],
    "authenticationMode": "API_AND_CONFIG_MAP",
    "autoMode": False,
    "addons": ["coredns", "kube-proxy", "vpc-cni"],
    "addonOwners": {},
}
# The stack the guide's settings make (AppSettings.stack_name's default).
STACK = "GpuPool"


def _facts(**changed):
    return ClusterFacts.from_answer({**ANSWER, **changed}, STACK)


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
        {"version": "1.28"},
        [
            (
                "E",
                "cluster.kubernetes_version: '1.28' is not supported; choose one of "
                f"{', '.join(creatable_minors(date.today()))} (an existing cluster's is its "
                "control plane's: upgrade inference to one)",
            )
        ],
    ),
    # Past extended support, not yet upgraded by EKS: still a cluster to add pools to, and the
    # advice moves the cluster, not a setting the lookup overrides.
    "a-minor-past-extended-support": (
        GUIDE,
        {"version": "1.31"},
        [
            (
                "W",
                "cluster.kubernetes_version: 1.31 left EKS extended support on 2026-11-26, and "
                "EKS upgrades such clusters itself at a time of its choosing: upgrade inference "
                "on yours (aws eks update-cluster-version); the stack follows once it reads the "
                "new minor, from the cluster's lookup taken again (`cdk context --reset` its "
                "entry) or, where nothing is looked up, from cluster.kubernetes_version",
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
                "setting (the stack creates the add-on) or set it true; an agent installed "
                "without EKS add-ons (a Helm chart, a DaemonSet) is not seen by ListAddons: keep "
                "false only where one runs",
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


AUTO_MODE_POOL = {**GUIDE, "pool": {"provisioner": "auto-mode", "instance_types": ["g6e.xlarge"]}}

ISSUE_53_CASES = {
    # Subnets with no default route: nodes there reach ECR, STS and EKS only through VPC
    # endpoints (what aws-cdk-lib warns of for its own kubectl subnets).
    "isolated-subnets-only": (
        GUIDE,
        {"isolatedSubnets": ANSWER["privateSubnets"]},
        [
            (
                "W",
                "cluster.existing.subnets_by_zone: subnet-0aaaaaaaaaaaaaaaa, "
                "subnet-0bbbbbbbbbbbbbbbb of inference route nowhere outside the VPC (no "
                "default route through a NAT or transit gateway: DescribeRouteTables, cached "
                "in cdk.context.json), so nodes and the stack's handlers there reach AWS only "
                "through VPC endpoints: the VPC needs interface endpoints for ecr.api, ecr.dkr, "
                "sts, eks, eks-auth and ec2, and the S3 gateway endpoint (EKS user guide, "
                '"Deploy private clusters with limited internet access"), or set '
                "subnets_by_zone to subnets behind a NAT gateway",
            )
        ],
    ),
    "auto-mode-pool-on-a-cluster-without-auto-mode": (
        AUTO_MODE_POOL,
        {"autoMode": False},
        [
            (
                "E",
                "cluster.existing: inference does not run EKS Auto Mode (DescribeCluster "
                "computeConfig.enabled is false, cached in cdk.context.json), so the deploy "
                "would fail where it applies an auto-mode pool's NodeClass: turn Auto Mode on "
                'for the cluster (EKS user guide, "Enable EKS Auto Mode on an existing '
                'cluster"), reset the cluster\'s entry (`cdk context --reset`) and synthesize '
                "again, or give the pool another provisioner",
            )
        ],
    ),
    # Read from the lookup: no warning that it might be off.
    "auto-mode-pool-on-an-auto-mode-cluster": (AUTO_MODE_POOL, {"autoMode": True}, []),
    "public-endpoint-limited-without-private-access": (
        GUIDE,
        {"endpointPrivateAccess": False, "publicAccessCidrs": ["203.0.113.0/24"]},
        [
            (
                "W",
                "cluster.existing: inference's API answers only 203.0.113.0/24 "
                "(publicAccessCidrs) and has no private endpoint, so the stack's kubectl "
                "handler runs in the cluster's subnets and calls it through their NAT "
                "gateways: allow their Elastic IP addresses in publicAccessCidrs, or turn "
                "private access on (`aws eks update-cluster-config --name inference --region "
                "us-east-1 --resources-vpc-config endpointPrivateAccess=true`), else every "
                "chart times out",
            )
        ],
    ),
    # With private access the handler is in the VPC and reaches the private endpoint.
    "public-endpoint-limited-with-private-access": (
        GUIDE,
        {"publicAccessCidrs": ["203.0.113.0/24"]},
        [],
    ),
}


@pytest.mark.parametrize(
    ("settings", "answer", "expected"), ISSUE_53_CASES.values(), ids=ISSUE_53_CASES.keys()
)
def test_what_the_lookup_found_is_judged_with_its_exact_message(settings, answer, expected):
    assert _findings(settings, _facts(**answer)) == expected


NEW_CLUSTER_SETTINGS = {
    "zones": ["us-east-1a", "us-east-1b"],
    "nat_gateways": 2,
    "endpoint_access": "private",
    "public_access_cidrs": ["203.0.113.0/24"],
    "logging": {"types": ["api"]},
    "system_nodes": {"instance_type": "m7i.large"},
}


@pytest.mark.parametrize("name", NEW_CLUSTER_SETTINGS)
def test_a_setting_only_a_created_cluster_has_is_refused_on_an_existing_one(name):
    """One behaviour for each: an error naming it, never silently ignored."""
    settings = {**GUIDE, "cluster": {**GUIDE["cluster"], name: NEW_CLUSTER_SETTINGS[name]}}
    found = [m for level, m in _findings(settings, _facts()) if level == "E"]
    assert len(found) == 1
    assert found[0].startswith(
        f"cluster.{name}: set, but the app does not create this cluster (cluster.existing), "
        "and "
    )
    assert found[0].endswith(": remove it")


def test_kubernetes_version_is_the_placeholders_until_the_lookup_answers():
    """Not refused: cdk.json sets it for every app, and it is what the stack is built on until
    the cluster is looked up; then the cluster's wins."""
    settings = load_settings(GUIDE, None)
    assert placeholder_facts(settings).version == "1.35"
    assert with_cluster_facts(settings, _facts()).cluster.kubernetes_version == "1.33"


def test_an_answer_cached_by_an_older_gpu_pool_is_still_read():
    """cdk.context.json files committed before the lookup read the endpoint's CIDRs, isolated
    subnets, Auto Mode and add-on owners keep working, as that gpu-pool judged them."""
    old = {k: v for k, v in ANSWER.items() if k not in ("isolatedSubnets", "publicAccessCidrs",
                                                        "autoMode", "addonOwners")}
    facts = ClusterFacts.from_answer(old, STACK)
    assert facts.public_access_cidrs == ("0.0.0.0/0",)
    assert not facts.public_access_limited
    assert facts.isolated_subnets == {}
    assert facts.addons == frozenset(ANSWER["addons"])


def test_another_stacks_add_on_is_the_clusters_and_the_stacks_own_is_its_own():
    """A second stack on the cluster (or the stack that created it) must not create the agents
    the first created (ResourceInUseException); the stack that created them keeps them."""
    answer = {
        "addons": ["eks-node-monitoring-agent", "eks-pod-identity-agent", "vpc-cni"],
        "addonOwners": {
            "eks-node-monitoring-agent": "GpuPool",
            "eks-pod-identity-agent": "Inference-Training",
        },
    }
    mine = with_cluster_facts(load_settings(GUIDE, None), _facts(**answer)).cluster.existing
    assert (mine.node_monitoring_agent, mine.pod_identity_agent) == (True, False)
    other = {**GUIDE, "stack_name": "Inference-Training"}
    facts = ClusterFacts.from_answer({**ANSWER, **answer}, "Inference-Training")
    theirs = with_cluster_facts(load_settings(other, None), facts).cluster.existing
    assert (theirs.node_monitoring_agent, theirs.pod_identity_agent) == (False, True)


def test_an_add_on_tagged_before_the_tag_named_a_stack_stays_the_stacks():
    """The tag's old value, `gpu-pool`: such an add-on stays with the stack reading it, as it
    did (taken for the cluster's, CloudFormation would delete it)."""
    answer = {
        "addons": ["eks-pod-identity-agent"],
        "addonOwners": {"eks-pod-identity-agent": "gpu-pool"},
    }
    existing = with_cluster_facts(load_settings(GUIDE, None), _facts(**answer)).cluster.existing
    assert existing.pod_identity_agent is True


def test_nodes_go_behind_a_nat_where_the_zone_has_such_a_subnet_else_in_its_isolated_ones():
    answer = {
        "privateSubnets": {
            "us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0eeeeeeeeeeeeeeee"],
            "us-east-1b": ["subnet-0bbbbbbbbbbbbbbbb"],
        },
        "isolatedSubnets": {
            "us-east-1a": ["subnet-0eeeeeeeeeeeeeeee"],
            "us-east-1b": ["subnet-0bbbbbbbbbbbbbbbb"],
        },
    }
    existing = with_cluster_facts(load_settings(GUIDE, None), _facts(**answer)).cluster.existing
    assert existing.subnets_by_zone == {
        "us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"],
        "us-east-1b": ["subnet-0bbbbbbbbbbbbbbbb"],
    }
    # Only the isolated one chosen is named.
    (warning,) = _findings(GUIDE, _facts(**answer))
    assert warning[1].startswith("cluster.existing.subnets_by_zone: subnet-0bbbbbbbbbbbbbbbb of ")


@pytest.mark.parametrize(
    ("answer", "in_vpc"),
    [
        ({}, True),
        ({"endpointPrivateAccess": False}, False),
        ({"endpointPrivateAccess": False, "publicAccessCidrs": ["203.0.113.0/24"]}, True),
        ({"endpointPublicAccess": False, "publicAccessCidrs": []}, True),
    ],
    ids=["both-endpoints", "public-only-open", "public-only-limited", "private-only"],
)
def test_the_kubectl_handler_runs_in_the_vpc_as_aws_cdk_lib_decides(answer, in_vpc):
    """aws-eks-v2 cluster.ts: the provider gets the private subnets whenever private access is
    on; and where the public endpoint is limited, the VPC's NAT addresses are the only ones a
    user can allow."""
    assert _facts(**answer).kubectl_in_vpc is in_vpc
