"""#47: a GPU pool on an existing cluster given by its name alone (the guide's `inference`).

The lookup (gpu_pool/cli/eks_cluster.py, which the project's CDK CLI plugin runs) answers from
moto's EKS and EC2 on 127.0.0.1, with what moto (5.2.5) leaves out served as EKS documents it:
DescribeCluster's accessConfig, resourcesVpcConfig.vpcId and clusterSecurityGroupId (EKS API
Reference, "DescribeCluster", VpcConfigResponse: EKS answers the VPC of the cluster's subnets and
the security group it created; moto echoes the request), and ListAddons/DescribeAddon, which
moto does not serve at all (EKS API Reference, "ListAddons", "DescribeAddon": an add-on not in
the cluster is ResourceNotFoundException). Its answer, cached as the CLI caches it, is what the
stack is built from; without it the stack is built on placeholders and holds its deploy.
"""

from __future__ import annotations

import json
import os
import subprocess

import aws_cdk as cdk
import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.cli.eks_cluster import describe_cluster
from gpu_pool.cli.lookup_session import LookupFailed
from gpu_pool.model.versions import autoscaler_image_tag
from gpu_pool.settings import ConfigError, load_settings
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
from tests.support.paths import ROOT

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
SECURITY_GROUP = "sg-0123456789abcdef0"
NODE = ROOT / "node_modules" / ".bin" / "node"


class _EksAsDocumented:
    """What moto leaves out of EKS, as the API Reference has it, for one session's clients."""

    def __init__(self, session: boto3.Session, vpc: str, mode: str, addons: dict[str, str]) -> None:
        self.vpc, self.mode, self.addons = vpc, mode, addons
        session.events.register("after-call.eks.DescribeCluster", self._describe_cluster)
        session.events.register("before-call.eks.ListAddons", self._list_addons)
        session.events.register("before-call.eks.DescribeAddon", self._describe_addon)

    def _describe_cluster(self, parsed, **_):
        parsed["cluster"]["accessConfig"] = {"authenticationMode": self.mode}
        config = parsed["cluster"]["resourcesVpcConfig"]
        config.update(vpcId=self.vpc, clusterSecurityGroupId=SECURITY_GROUP)

    def _list_addons(self, params, **_):
        return _ok({"addons": sorted(self.addons)})

    def _describe_addon(self, params, **_):
        name = params["url_path"].rsplit("/", 1)[-1]
        if name not in self.addons:
            raise ClientError(
                {"Error": {"Code": "ResourceNotFoundException", "Message": name}}, "DescribeAddon"
            )
        return _ok({"addon": {"addonName": name, "status": self.addons[name]}})


def _ok(parsed):
    return AWSResponse("https://eks", 200, {}, None), parsed


def _network(ec2):
    """A VPC as eksctl makes one: a public subnet routing to an internet gateway, private
    subnets in two zones (one on its own route table, one on the VPC's main table)."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = {
        zone: ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"][
            "SubnetId"
        ]
        for zone, cidr in (
            (f"{REGION}a", "10.0.1.0/24"),
            (f"{REGION}b", "10.0.2.0/24"),
            (f"{REGION}c", "10.0.3.0/24"),
        )
    }
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    public = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
    ec2.associate_route_table(RouteTableId=public, SubnetId=subnet[f"{REGION}c"])
    private = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.associate_route_table(RouteTableId=private, SubnetId=subnet[f"{REGION}a"])
    return vpc, subnet


def _cluster(name, *, mode="API_AND_CONFIG_MAP", addons=None, version="1.33", public=True):
    """A cluster of that name in moto, and the lookup's answer for it."""
    session = boto3.Session(region_name=REGION)
    vpc, subnet = _network(session.client("ec2"))
    session.client("eks").create_cluster(
        name=name,
        version=version,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-cluster",
        resourcesVpcConfig={
            "subnetIds": sorted(subnet.values()),
            "endpointPublicAccess": public,
            "endpointPrivateAccess": True,
        },
    )
    _EksAsDocumented(session, vpc, mode, addons or {"vpc-cni": "ACTIVE"})
    return vpc, subnet, describe_cluster(session, name)


@pytest.fixture(scope="module")
def world(aws_endpoint):
    """The guide's cluster, `inference`, on 1.33 without either agent add-on, looked up."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AWS_ENDPOINT_URL": aws_endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }.items():
            patch.setenv(name, value)
        yield _cluster("inference")


@pytest.fixture(scope="module")
def looked_up_stack(world):
    """The guide's config synthesized as the CLI's second pass, with the lookup cached."""
    app = cdk.App(context={**LOOKUP, KEY: world[2]})
    stack = GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    return stack, app.synth().get_stack_by_name("GpuPool").template


def test_the_lookup_answers_the_clusters_facts(world):
    vpc, subnet, answer = world
    assert answer == {
        "name": "inference",
        "version": "1.33",
        "vpcId": vpc,
        # The public subnet (us-east-1c) routes to the internet gateway: not a node's.
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
    *_, answer = _cluster(
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
        r["Properties"]["AddonName"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EKS::Addon"
    )
    assert addons == ["eks-node-monitoring-agent", "eks-pod-identity-agent"]
    assert [e.data for e in stack.node.metadata if e.type == "gpu-pool:unchecked"] == []
    assert "GpuPoolUncheckedFacts" not in template["Rules"]


def test_a_private_only_endpoint_puts_the_kubectl_handler_in_the_clusters_vpc(world):
    """The API answers only inside the VPC: the handler runs in a private subnet of each zone,
    in the cluster security group (which EKS lets reach the API)."""
    _, subnet, answer = world
    private = {**answer, "endpointPublicAccess": False}
    app = cdk.App(context={**LOOKUP, KEY: private})
    GpuPoolStack(app, "GpuPool", settings=load_settings(GUIDE, None))
    template = app.synth().get_stack_by_name("GpuPool").template
    (handler,) = [
        r["Properties"]
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and k.startswith("KubectlProviderHandler")
    ]
    assert handler["VpcConfig"]["SubnetIds"] == [subnet[f"{REGION}a"], subnet[f"{REGION}b"]]
    assert handler["VpcConfig"]["SecurityGroupIds"] == [SECURITY_GROUP]


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


def test_a_config_map_only_cluster_stops_the_synth_with_the_command(aws_api):
    name = "configmap-" + os.urandom(4).hex()
    *_, answer = _cluster(name, mode="CONFIG_MAP")
    settings = {**GUIDE, "cluster": {**GUIDE["cluster"], "name": name}}
    key = eks_cluster_key(name)
    app = cdk.App(context={**LOOKUP, key: answer})
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(app, "GpuPool", settings=load_settings(settings, None))
    assert (
        f"`aws eks update-cluster-config --name {name} --region us-east-1 --access-config "
        "authenticationMode=API_AND_CONFIG_MAP`"
    ) in str(err.value)


@pytest.mark.skipif(not NODE.exists(), reason="pinned Node.js not installed")
def test_the_plugin_answers_the_cluster_provider_through_the_module(tmp_path):
    """The plugin registers `gpu-pool-eks-cluster` and runs gpu_pool.cli.eks_cluster: without
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
