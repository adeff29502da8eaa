"""#53 item 9: the existing-cluster path in composition. One looked-up cluster (moto's, as the
CLI plugin reads it: tests/support/eks_world.py), its cached answer varied as another cluster's
lookup would give it (its add-ons, authentication mode, Auto Mode), under apps of each kind:
Cluster Autoscaler, Karpenter-only, Auto-Mode-only, GPU metrics through CloudWatch, and a kubectl
provider of the user's own. What each app creates on the cluster is what the cluster lacks and
the app needs, and every add-on it creates carries its stack's owner tag, so that a later lookup
tells the stack's own add-ons from the cluster's (gpu_pool/plan/existing_cluster.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_pool.cdk.lookups.region import PLUGIN_LOADED, REGION_LOOKUPS
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.plan.existing_cluster import ADDON_OWNER_TAG
from gpu_pool.settings import ConfigError, load_settings
from tests.support.cfn import unvalidated_app
from tests.support.eks_world import in_moto, looked_up_cluster
from tests.support.looked_up import (
    ACCOUNT,
    LOOKUP,
    REGION,
    ami_parameter_key,
    eks_cluster_key,
    offerings_key,
    quota_key,
)

pytestmark = pytest.mark.synth

NAME = "composed"
KEY = eks_cluster_key(NAME)
CLUSTER = {"name": NAME, "existing": True}
TOKEN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:their-kubectl"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/their-kubectl"
MONITORING, POD_IDENTITY = "eks-node-monitoring-agent", "eks-pod-identity-agent"
CLOUDWATCH = "amazon-cloudwatch-observability"


def _app(pools: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"account": ACCOUNT, "region": REGION, "cluster": CLUSTER, "pools": pools, **extra}


NODE_GROUPS = {"gpu": {"instance_types": ["g6e.xlarge"], "max_size": 2}}
KARPENTER = {"gpu": {"provisioner": "karpenter", "instance_types": ["g6e.xlarge"]}}
AUTO_MODE = {"gpu": {"provisioner": "auto-mode", "instance_types": ["g6e.xlarge"]}}

# name: (stack name, settings, changes to the looked-up answer, the add-ons the stack creates)
APPS: dict[str, tuple[str, dict[str, Any], dict[str, Any], list[str]]] = {
    # Karpenter alone still needs both agents: Pod Identity hands the controller its
    # credentials, the monitoring agent reports GPU health to Karpenter's repair.
    "karpenter-only": ("GpuPool", _app(KARPENTER), {}, [MONITORING, POD_IDENTITY]),
    # Auto Mode runs its own Karpenter and node agent (EKS user guide, "Automatically repair
    # nodes"): the stack asks for neither.
    "auto-mode-only": ("GpuPool", _app(AUTO_MODE), {"autoMode": True}, []),
    # One agent already on the cluster: only the other is created.
    "pod-identity-present": (
        "GpuPool",
        _app(NODE_GROUPS),
        {"addons": ["vpc-cni", POD_IDENTITY]},
        [MONITORING],
    ),
    # GPU metrics through CloudWatch: the add-on too, under another stack name.
    "cloudwatch-metrics": (
        "Inference",
        _app(NODE_GROUPS, metrics={"gpu": "cloudwatch"}),
        {"addons": ["vpc-cni", POD_IDENTITY, MONITORING]},
        [CLOUDWATCH],
    ),
    # The user's own kubectl provider on a cluster in CONFIG_MAP mode: no access entry is needed
    # for the stack's charts (the provider's role is the user's to map), so none is made.
    "own-provider-config-map": (
        "GpuPool",
        _app(
            NODE_GROUPS,
            cluster={
                **CLUSTER,
                "existing": {
                    "kubectl_provider_service_token": TOKEN,
                    "kubectl_provider_role_arn": ROLE,
                },
            },
        ),
        {"authenticationMode": "CONFIG_MAP", "addons": ["vpc-cni", POD_IDENTITY, MONITORING]},
        [],
    ),
}


@pytest.fixture(scope="module")
def answer(aws_endpoint):
    with in_moto(aws_endpoint):
        return looked_up_cluster(NAME)[2]


@pytest.fixture(scope="module")
def templates(answer) -> dict[str, dict[str, Any]]:
    """Each app synthesized once on its variant of the cluster."""
    synthesized = {}
    for case, (stack_name, settings, changes, _) in APPS.items():
        app = unvalidated_app(context={**LOOKUP, KEY: {**answer, **changes}})
        GpuPoolStack(app, stack_name, settings=load_settings(settings, None))
        synthesized[case] = app.synth().get_stack_by_name(stack_name).template
    return synthesized


def _of_type(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


@pytest.mark.parametrize("case", APPS)
def test_each_app_creates_the_add_ons_the_cluster_lacks_and_it_needs(templates, case):
    created = sorted(
        a["Properties"]["AddonName"] for a in _of_type(templates[case], "AWS::EKS::Addon")
    )
    assert created == APPS[case][3]


@pytest.mark.parametrize("case", APPS)
def test_every_add_on_a_stack_creates_carries_its_owner_tag(templates, case):
    stack_name = APPS[case][0]
    for addon in _of_type(templates[case], "AWS::EKS::Addon"):
        assert addon["Properties"]["Tags"] == [{"Key": ADDON_OWNER_TAG, "Value": stack_name}]


def test_the_users_own_kubectl_provider_serves_every_chart_and_no_access_entry_is_made(
    templates,
):
    template = templates["own-provider-config-map"]
    assert _of_type(template, "AWS::EKS::AccessEntry") == []
    assert [k for k in template["Resources"] if k.startswith("KubectlProvider")] == []
    applied = [
        r for r in template["Resources"].values() if r["Type"].startswith("Custom::AWSCDK-EKS-")
    ]
    assert applied, "no chart or manifest applied"
    assert {json.dumps(r["Properties"]["ServiceToken"]) for r in applied} == {json.dumps(TOKEN)}


@pytest.mark.parametrize("case", APPS)
def test_before_the_lookup_the_placeholders_are_judged_by_no_rule(case):
    """Offline (nothing looked up), each app is built on placeholder facts: no rule that reads
    the cluster's facts (GP-APP-3x: subnets, add-ons, authentication, Auto Mode, endpoint)
    speaks of them, and the deploy is held until the lookup (the template's rule)."""
    stack_name, settings, _, _ = APPS[case]
    app = unvalidated_app()
    stack = GpuPoolStack(app, stack_name, settings=load_settings(settings, None))
    template = app.synth().get_stack_by_name(stack_name).template
    spoken = [
        entry.data
        for construct in stack.node.find_all()
        for entry in construct.node.metadata
        if entry.type in ("aws:cdk:warning", "aws:cdk:error")
        and "gpu-pool:GP-APP-3" in str(entry.data)
    ]
    assert spoken == []
    assert "GpuPoolUncheckedFacts" in template["Rules"]


# A cluster given by hand: its subnets and a kubectl provider of the user's own, so nothing is
# looked up about it, while the Region's facts are (cdk.json's gpu-pool:region-lookups).
HAND_SET = _app(
    {"gpu": {"instance_types": ["g6.xlarge"], "max_size": 2}},
    cluster={
        "name": "platform",
        "kubernetes_version": "1.34",
        "existing": {
            "kubectl_provider_service_token": TOKEN,
            "kubectl_provider_role_arn": ROLE,
            "subnets_by_zone": {
                "us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"],
                "us-east-1b": ["subnet-0bbbbbbbbbbbbbbbb"],
            },
        },
    },
)


def _ami(minor: str) -> str:
    return ami_parameter_key(
        f"/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/x86_64/nvidia/recommended/"
        "image_id"
    )


def test_a_hand_set_cluster_with_region_lookups_is_looked_up_with_the_region(
    tmp_path, monkeypatch, answer
):
    """With the region lookups on, a cluster given by hand is looked up too (its version and
    add-ons are facts like the Region's), as the CDK CLI's passes do it: each synth asks what is
    missing, the CLI caches the answers and synthesizes again. The first pass asks the cluster,
    the type's offerings and the vCPU quota (no AMI: the cluster's minor is not known yet); the
    second the AMI of the minor the cluster runs; the last builds node groups of that minor in
    the hand-set subnets of the zones that offer the type, with nothing unchecked or held."""
    monkeypatch.setenv(PLUGIN_LOADED, "1")
    answers = _hand_set_answers(answer, ["us-east-1a", "us-east-1b", "us-east-1c"])
    passes, stack, template = _cli_passes(tmp_path, answers)
    assert passes == [
        sorted([eks_cluster_key("platform"), offerings_key("g6.xlarge"), quota_key("L-DB2E81BA")]),
        sorted([_ami("1.33"), _bottlerocket("1.33")]),
    ]
    (group,) = _of_type(template, "AWS::EKS::Nodegroup")
    # The hand-set subnets; the cluster's minor.
    assert group["Properties"]["Subnets"] == [
        "subnet-0aaaaaaaaaaaaaaaa",
        "subnet-0bbbbbbbbbbbbbbbb",
    ]
    assert group["Properties"]["Version"] == "1.33"
    assert [e.data for e in stack.node.metadata if e.type == "gpu-pool:unchecked"] == []
    assert "GpuPoolUncheckedFacts" not in template.get("Rules", {})


def test_a_hand_set_clusters_zones_are_judged_against_the_types_offerings(
    tmp_path, monkeypatch, answer
):
    """The same passes where us-east-1b, a zone of the hand-set subnets, lacks the type: the
    last pass refuses the pool, whose one node group would span it (EKS refuses such a group)."""
    monkeypatch.setenv(PLUGIN_LOADED, "1")
    with pytest.raises(ConfigError) as refused:
        _cli_passes(tmp_path, _hand_set_answers(answer, ["us-east-1a", "us-east-1c"]))
    assert (
        "pools.gpu.zones: empty, so the pool's node group spans every zone of the cluster, and "
        "us-east-1b does not offer 'g6.xlarge' (EC2 DescribeInstanceTypeOfferings, cached in "
        "cdk.context.json), which EKS refuses: set zones to those of the cluster that do: "
        "us-east-1a"
    ) in str(refused.value)


def _bottlerocket(minor: str) -> str:
    return ami_parameter_key(
        f"/aws/service/bottlerocket/aws-k8s-{minor}-nvidia/x86_64/latest/image_id"
    )


def _hand_set_answers(answer: dict[str, Any], offered: list[str]) -> dict[str, Any]:
    """What the CLI's lookups answer for HAND_SET: the cluster (moto's, on 1.33), the type's
    offerings, the vCPU quota, the AL2023 AMI of 1.33 (Bottlerocket's not published)."""
    return {
        eks_cluster_key("platform"): {**answer, "name": "platform", "version": "1.33"},
        offerings_key("g6.xlarge"): offered,
        quota_key("L-DB2E81BA"): 64.0,
        _ami("1.33"): "ami-0123456789abcdef0",
        _bottlerocket("1.33"): "not-published",
    }


def _cli_passes(tmp_path, answers: dict[str, Any]) -> tuple[list[list[str]], Any, dict[str, Any]]:
    """The CDK CLI's passes over HAND_SET: synthesize, answer what the assembly says is missing
    from `answers`, again until nothing is: the keys each pass asked, the last stack and
    template."""
    cached: dict[str, Any] = {}
    passes = []
    for turn in range(4):
        out = tmp_path / str(turn)
        app = unvalidated_app(context={REGION_LOOKUPS: True, **LOOKUP, **cached}, outdir=str(out))
        stack = GpuPoolStack(app, "GpuPool", settings=load_settings(HAND_SET, None))
        template = app.synth().get_stack_by_name("GpuPool").template
        manifest = json.loads((out / "manifest.json").read_text())
        asked = sorted(m["key"] for m in manifest.get("missing", []))
        if not asked:
            return passes, stack, template
        passes.append(asked)
        cached |= {key: answers[key] for key in asked}
    raise AssertionError(f"still asking after {passes}")


def test_before_its_lookup_a_hand_set_cluster_is_said_to_keep_its_own_subnets():
    """The unchecked fact's words for a hand-set cluster: its node groups go into the subnets
    the settings name (not placeholders no deploy finds)."""
    app = unvalidated_app(context={REGION_LOOKUPS: True, **LOOKUP})
    stack = GpuPoolStack(app, "GpuPool", settings=load_settings(HAND_SET, None))
    (message,) = [
        e.data["message"]
        for e in stack.node.metadata
        if e.type == "gpu-pool:unchecked" and e.data["message"].startswith("cluster.existing")
    ]
    assert (
        "The stack is built on placeholders: node groups of Kubernetes 1.34 "
        "(cluster.kubernetes_version) in the subnets of cluster.existing.subnets_by_zone"
    ) in message
