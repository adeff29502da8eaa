"""#47: a GPU pool on an existing cluster given by its name alone (the guide's `inference`).

The cluster is moto's, looked up as the project's CDK CLI plugin does (tests/support/eks_world.py;
the lookup's own tests: tests/cli/test_eks_cluster_lookup.py). Its answer, cached as the CLI
caches it, is what the stack is built from; without it the stack is built on placeholders and
holds its deploy. IAM simulation: the lookup's calls as the bootstrap lookup role, and the
stack's kubectl provider.
"""

from __future__ import annotations

import json
import os

import pytest

from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.model.versions import autoscaler_image_tag
from gpu_pool.settings import ConfigError, load_settings
from tests.support.cfn import unvalidated_app
from tests.support.eks_world import SECURITY_GROUP, in_moto, looked_up_cluster
from tests.support.iam_simulation import (
    Call,
    arn_of,
    identity_request,
    logical_id,
    physical_name,
    role_id,
    role_policies,
    session_principal,
    simulate,
)
from tests.support.looked_up import ACCOUNT, LOOKUP, REGION, eks_cluster_key, synth_offline
from tests.support.managed_policies import managed_policy

pytestmark = pytest.mark.synth

# The guide's situation: `--cluster-name inference`, one GPU pool; cdk.json's 1.35 beside it.
GUIDE = {
    "account": ACCOUNT,
    "region": REGION,
    "cluster": {"name": "inference", "existing": True, "kubernetes_version": "1.35"},
    "pool": {"instance_types": ["g6e.xlarge"], "min_size": 0, "max_size": 4},
    "autoscaler": {"enabled": True},
}
# The key the CDK CLI caches the lookup under: the provider, then its props sorted by name.
KEY = eks_cluster_key("inference")


@pytest.fixture(scope="module")
def world(aws_endpoint):
    """The guide's cluster, `inference`, on 1.33 without either agent add-on, looked up."""
    with in_moto(aws_endpoint):
        yield looked_up_cluster("inference")


@pytest.fixture(scope="module")
def looked_up_stack(world):
    """The guide's config synthesized as the CLI's second pass, with the lookup cached."""
    app = unvalidated_app(context={**LOOKUP, KEY: world[2]})
    stack = GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    return stack, app.synth().get_stack_by_name("GpuPool").template


def test_node_groups_go_into_the_clusters_private_subnets_at_its_version(world, looked_up_stack):
    _, subnet, _ = world
    _, template = looked_up_stack
    groups = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EKS::Nodegroup"
    ]
    assert groups
    for group in groups:
        assert group["ClusterName"] == "inference"
        assert group["Version"] == "1.33"
        assert group["Subnets"][0] in (subnet[f"{REGION}a"], subnet[f"{REGION}b"])
    assert {s for g in groups for s in g["Subnets"]} == {subnet[f"{REGION}a"], subnet[f"{REGION}b"]}


def test_the_autoscaler_is_the_clusters_minor(looked_up_stack):
    _, template = looked_up_stack
    (chart,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-HelmChart"
        and r["Properties"].get("Chart") == "cluster-autoscaler"
    ]
    assert json.loads(chart["Values"])["image"]["tag"] == autoscaler_image_tag("1.33")
    assert autoscaler_image_tag("1.33").startswith("v1.33.")


def test_the_stack_has_its_own_kubectl_provider_and_one_access_entry_for_its_role(looked_up_stack):
    _, template = looked_up_stack
    resources = template["Resources"]
    (entry_id,) = [k for k, r in resources.items() if r["Type"] == "AWS::EKS::AccessEntry"]
    entry = resources[entry_id]["Properties"]
    assert entry["ClusterName"] == "inference"
    (role,) = [
        k
        for k, r in resources.items()
        if r["Type"] == "AWS::IAM::Role" and k.startswith("KubectlProviderHandlerServiceRole")
    ]
    assert entry["PrincipalArn"] == {"Fn::GetAtt": [role, "Arn"]}
    assert entry["AccessPolicies"] == [
        {
            "AccessScope": {"Type": "cluster"},
            "PolicyArn": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
                    ],
                ]
            },
        }
    ]
    kubectl = {k: r for k, r in resources.items() if r["Type"].startswith("Custom::AWSCDK-EKS-")}
    assert kubectl
    for lid, resource in kubectl.items():
        # Served by the stack's own provider, and only once its role has access.
        assert resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0].startswith(
            "KubectlProviderframeworkonEvent"
        ), lid
        assert entry_id in resource.get("DependsOn", []), lid


def test_missing_agents_are_created_and_nothing_is_held(looked_up_stack):
    stack, template = looked_up_stack
    addons = sorted(
        (r["Properties"]["AddonName"], json.dumps(r["Properties"].get("Tags")))
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EKS::Addon"
    )
    # Each tagged with the stack's name, so a later lookup leaves it to this stack and shows
    # it to any other stack on the cluster as the cluster's (plan/existing_cluster.py).
    owned = json.dumps([{"Key": "gpu-pool.io/created-by", "Value": "GpuPool"}])
    assert addons == [("eks-node-monitoring-agent", owned), ("eks-pod-identity-agent", owned)]
    assert [e.data for e in stack.node.metadata if e.type == "gpu-pool:unchecked"] == []
    assert "GpuPoolUncheckedFacts" not in template["Rules"]


def _kubectl_handler(template: dict) -> dict:
    """The properties of the stack's own kubectl provider's handler function."""
    (handler,) = [
        r["Properties"]
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and k.startswith("KubectlProviderHandler")
    ]
    return dict(handler)


def test_a_private_only_endpoint_puts_the_kubectl_handler_in_the_clusters_vpc(world):
    """The API answers only inside the VPC: the handler runs in a private subnet of each zone,
    in the cluster security group (which EKS lets reach the API)."""
    _, subnet, answer = world
    private = {**answer, "endpointPublicAccess": False}
    app = unvalidated_app(context={**LOOKUP, KEY: private})
    GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    template = app.synth().get_stack_by_name("GpuPool").template
    handler = _kubectl_handler(template)
    assert handler["VpcConfig"]["SubnetIds"] == [subnet[f"{REGION}a"], subnet[f"{REGION}b"]]
    assert handler["VpcConfig"]["SecurityGroupIds"] == [SECURITY_GROUP]


@pytest.mark.parametrize(
    "endpoint",
    [
        # #53's deploy blocker: office CIDRs only on the public endpoint. Outside the VPC the
        # handler calls from AWS's addresses, which are not among them: the first chart timed
        # out.
        {"publicAccessCidrs": ["203.0.113.0/24"]},
        # Both endpoints, the public one open: in the VPC, as aws-cdk-lib puts its own
        # clusters' handler whenever private access is on (aws-eks-v2 cluster.ts).
        {},
        # No private endpoint, the public one limited: the VPC's NAT addresses are the only
        # ones a user can allow (GP-APP-37 says so).
        {"endpointPrivateAccess": False, "publicAccessCidrs": ["203.0.113.0/24"]},
    ],
    ids=["limited-public-and-private", "open-public-and-private", "limited-public-only"],
)
def test_the_kubectl_handler_runs_in_the_vpc_unless_the_open_public_endpoint_is_all(
    world, endpoint
):
    _, subnet, answer = world
    app = unvalidated_app(context={**LOOKUP, KEY: {**answer, **endpoint}})
    GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    handler = _kubectl_handler(app.synth().get_stack_by_name("GpuPool").template)
    assert handler["VpcConfig"]["SubnetIds"] == [subnet[f"{REGION}a"], subnet[f"{REGION}b"]]
    assert handler["VpcConfig"]["SecurityGroupIds"] == [SECURITY_GROUP]


def test_an_open_public_endpoint_alone_keeps_the_handler_outside_the_vpc(world):
    _, _, answer = world
    public = {**answer, "endpointPrivateAccess": False}
    app = unvalidated_app(context={**LOOKUP, KEY: public})
    GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    assert "VpcConfig" not in _kubectl_handler(app.synth().get_stack_by_name("GpuPool").template)


def test_a_private_only_endpoint_with_hand_set_subnets_puts_the_handler_in_them(world):
    """The lookup found no private subnet, the settings name them (as GP-APP-32 asks): the
    handler runs in those, not in none (a traceback from the CDK before)."""
    _, subnet, answer = world
    private = {**answer, "endpointPublicAccess": False, "privateSubnets": {}}
    hand_set = {f"{REGION}a": [subnet[f"{REGION}a"]]}
    settings = {**GUIDE, "cluster": {**GUIDE["cluster"], "existing": {"subnets_by_zone": hand_set}}}
    app = unvalidated_app(context={**LOOKUP, KEY: private})
    GpuPoolStack(app, "GpuPool", settings=load_settings(settings, None))
    template = app.synth().get_stack_by_name("GpuPool").template
    handler = _kubectl_handler(template)
    assert handler["VpcConfig"]["SubnetIds"] == [subnet[f"{REGION}a"]]


def test_a_private_only_endpoint_without_a_cluster_security_group_names_the_settings(world):
    _, _, answer = world
    private = {**answer, "endpointPublicAccess": False, "clusterSecurityGroupId": ""}
    app = unvalidated_app(context={**LOOKUP, KEY: private})
    with pytest.raises(ConfigError) as refused:
        GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    assert str(refused.value) == (
        "cluster.existing: inference's endpoint is private only, so the stack's kubectl handler "
        "runs in its VPC, and DescribeCluster named no private subnet or no cluster security "
        "group for it: set cluster.existing.subnets_by_zone and "
        "cluster.existing.cluster_security_group_id"
    )


def test_karpenter_on_the_stacks_own_provider_needs_no_word_on_its_registry_login(world):
    """GP-CTRL-02 warns that an imported kubectl provider's role may not log in to
    public.ecr.aws; the stack's own provider's role has the ECR Public policy, and Karpenter's
    nodes go in the looked-up cluster security group."""
    from aws_cdk.assertions import Annotations, Match

    settings = {**GUIDE, "pools": {"gpu": {"provisioner": "karpenter"}}}
    settings.pop("pool")
    app = unvalidated_app(context={**LOOKUP, KEY: world[2]})
    stack = GpuPoolStack(app, "GpuPool", settings=load_settings(settings, None))
    template = app.synth().get_stack_by_name("GpuPool").template
    warnings = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    assert not [w for w in warnings if "oci://public.ecr.aws" in str(w.entry.data)]
    assert SECURITY_GROUP in json.dumps(template)


def test_offline_one_warning_per_unchecked_fact_and_the_deploy_held():
    template, unchecked = synth_offline(GUIDE)
    assert unchecked == (
        (
            "GP-REGION-08",
            "cluster.existing: not checked (not looked up yet: a synth without the CDK CLI, or "
            "its first pass): the EKS cluster inference of account 123456789012 in us-east-1 "
            "(its Kubernetes version, private subnets, cluster security group, endpoint, "
            "authentication mode and add-ons). The stack is built on placeholders: node groups "
            "of Kubernetes 1.35 (cluster.kubernetes_version) in subnets no deploy finds. Read "
            "it with `aws eks describe-cluster --name inference --region us-east-1`; a synth "
            "with credentials of account 123456789012 checks it and caches the answer in "
            "cdk.context.json. Until then gpu-pool replacements (./dev deploy) and the "
            "template's own rule refuse its deploy",
        ),
        (
            "GP-REGION-08",
            "cluster.zones: not checked (not looked up yet: a synth without the CDK CLI, or its "
            "first pass): the zones of us-east-1 for account 123456789012. The pools' zones and "
            "Local Zones are not judged against them. Read it with `aws ec2 "
            "describe-availability-zones --region us-east-1`; a synth with credentials of "
            "account 123456789012 checks it and caches the answer in cdk.context.json. It "
            "feeds only a warning, so the deploy does not wait for it",
        ),
    )
    assert "GpuPoolUncheckedFacts" in template["Rules"]


def test_no_ami_is_looked_up_for_a_minor_the_cluster_may_not_run(tmp_path, monkeypatch):
    """With region lookups on and the cluster not looked up, the AMI parameters of the
    settings' 1.35 are not asked: the CLI would cache answers for a minor the cluster does not
    run; they are asked once the cluster's version is known."""
    # The CLI's first pass, its plugin loaded.
    monkeypatch.setenv("GPU_POOL_CDK_PLUGIN", "1")
    app = unvalidated_app(context={"gpu-pool:region-lookups": True}, outdir=str(tmp_path))
    stack = GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    app.synth()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    missing = [m["key"] for m in manifest.get("missing", [])]
    assert KEY in missing
    assert [k for k in missing if k.startswith("ssm:")] == []
    unchecked = [e.data["message"] for e in stack.node.metadata if e.type == "gpu-pool:unchecked"]
    assert not any("publishes" in m for m in unchecked)


def test_a_config_map_only_cluster_stops_the_synth_with_the_command(aws_api):
    name = "configmap-" + os.urandom(4).hex()
    *_, answer = looked_up_cluster(name, mode="CONFIG_MAP")
    settings = {**GUIDE, "cluster": {**GUIDE["cluster"], "name": name}}
    key = eks_cluster_key(name)
    app = unvalidated_app(context={**LOOKUP, key: answer})
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(app, "GpuPool", settings=load_settings(settings, None))
    assert (
        f"`aws eks update-cluster-config --name {name} --region us-east-1 --access-config "
        "authenticationMode=API_AND_CONFIG_MAP`"
    ) in str(err.value)


# ---- IAM simulation: the lookup's calls as the bootstrap lookup role, the kubectl provider's --

CLUSTER_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/inference"
# Service Authorization Reference, Amazon EKS: DescribeCluster and ListAddons act on the
# cluster, DescribeAddon on the add-on (addon/<cluster>/<add-on>/<uuid>); Amazon EC2:
# DescribeSubnets and DescribeRouteTables have no resource-level permissions ("*").
LOOKUP_CALLS = {
    "describe-cluster": Call("eks:DescribeCluster", CLUSTER_ARN),
    "list-addons": Call("eks:ListAddons", CLUSTER_ARN),
    "describe-addon": Call(
        "eks:DescribeAddon",
        f"arn:aws:eks:{REGION}:{ACCOUNT}:addon/inference/eks-pod-identity-agent/"
        "8ec9f0a2-1111-2222-3333-444455556666",
    ),
    "describe-subnets": Call("ec2:DescribeSubnets", "*"),
    "describe-route-tables": Call("ec2:DescribeRouteTables", "*"),
}
# What the lookup role never needs: a read-only role changes nothing.
LOOKUP_DENIED = {"update-cluster-config": Call("eks:UpdateClusterConfig", CLUSTER_ARN)}
# The stack's kubectl provider: its handler describes the cluster (aws-eks-v2 kubectl-handler:
# `aws eks update-kubeconfig`), and that cluster only; its framework function invokes it.
KUBECTL_CALLS = {"describe-cluster": Call("eks:DescribeCluster", CLUSTER_ARN)}
KUBECTL_DENIED = {
    "describe-other-cluster": Call(
        "eks:DescribeCluster", f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/other"
    ),
    "update-cluster": Call("eks:UpdateClusterConfig", CLUSTER_ARN),
}


def _lookup_role_requests():
    # cdk bootstrap's lookup role: ReadOnlyAccess (the plugin assumes it: lookup_session.py).
    read_only = managed_policy("arn:aws:iam::aws:policy/ReadOnlyAccess")
    policies = [(read_only["PolicyName"], read_only["Document"])]
    principal = session_principal(f"cdk-hnb659fds-lookup-role-{ACCOUNT}-{REGION}")
    return {
        f"lookup/{name}": (expected, identity_request(principal, policies, call))
        for expected, calls in (("Allowed", LOOKUP_CALLS), ("ImplicitlyDenied", LOOKUP_DENIED))
        for name, call in calls.items()
    }


def _kubectl_requests(template):
    role = role_id(template, "KubectlProviderHandlerServiceRole")
    principal = session_principal(physical_name(template, role))
    policies = role_policies(template, role)
    framework = role_id(template, "KubectlProviderframeworkonEventServiceRole")
    invoke = Call(
        "lambda:InvokeFunction",
        arn_of(template, logical_id(template, "AWS::Lambda::Function", "KubectlProviderHandler")),
    )
    return {
        **{
            f"kubectl/{name}": (expected, identity_request(principal, policies, call))
            for expected, calls in (
                ("Allowed", KUBECTL_CALLS),
                ("ImplicitlyDenied", KUBECTL_DENIED),
            )
            for name, call in calls.items()
        },
        "kubectl-framework/invoke-handler": (
            "Allowed",
            identity_request(
                session_principal(physical_name(template, framework)),
                role_policies(template, framework),
                invoke,
            ),
        ),
    }


def test_iam_simulation_allows_each_new_call_and_nothing_beyond_it(looked_up_stack):
    _, template = looked_up_stack
    cases = {**_lookup_role_requests(), **_kubectl_requests(template)}
    outcomes = simulate([request for _, request in cases.values()])
    results = {}
    for (name, (_, _)), outcome in zip(cases.items(), outcomes, strict=True):
        assert outcome["result"] != "Error", outcome
        assert outcome["ignoredContextKeys"] == [], outcome
        results[name] = outcome["result"]
    assert results == {name: expected for name, (expected, _) in cases.items()}


def test_no_warning_about_route_tables_nothing_reads(world):
    """aws-cdk-lib warns for each subnet imported without its route table; node groups and the
    kubectl handler (in the VPC here) take subnet ids alone, so the warning is acknowledged
    rather than shown to every user of an existing cluster."""
    from aws_cdk.assertions import Annotations, Match

    app = unvalidated_app(context={**LOOKUP, KEY: world[2]})
    stack = GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    warnings = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    assert [w.id for w in warnings if "routeTableId" in str(w.entry.data)] == []
    assert _kubectl_handler(app.synth().get_stack_by_name("GpuPool").template)["VpcConfig"]
