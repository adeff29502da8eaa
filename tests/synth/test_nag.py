"""cdk-nag's AwsSolutions pack passes on every stack shape, with only reasoned acknowledgments."""

import json

import aws_cdk as cdk
import pytest

from gpu_pool.cdk.nag.acknowledge import MANAGED_POLICY_REASONS, apply_aws_solutions, nag_form
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import AppSettings
from tests.support.looked_up import LOOKUP, eks_cluster_key
from tests.support.settings import (
    AUTO_MODE,
    EXISTING,
    EXISTING_BY_NAME,
    KARPENTER,
    MIXED,
    MIXED_AUTO_MODE,
    MULTI,
    NODE_GROUP_KMS,
)
from tests.unit.test_existing_cluster import ANSWER

# EXISTING_BY_NAME's lookup answer (tests/unit/test_existing_cluster.py's) for an endpoint that
# answers only inside the VPC: the stack's kubectl handler then runs in the VPC, with the VPC
# access policy too.
PRIVATE_ONLY = {**LOOKUP, eks_cluster_key("inference"): {**ANSWER, "endpointPublicAccess": False}}


@pytest.mark.parametrize(
    ("settings", "context"),
    [
        (MULTI, {}),
        (EXISTING, {}),
        (EXISTING_BY_NAME, {}),
        (EXISTING_BY_NAME, PRIVATE_ONLY),
        (KARPENTER, {}),
        (MIXED, {}),
        (AUTO_MODE, {}),
        (MIXED_AUTO_MODE, {}),
        (NODE_GROUP_KMS, {}),
    ],
    ids=[
        "zones",
        "existing-cluster",
        "existing-by-name",
        "existing-private-endpoint",
        "karpenter",
        "mixed",
        "auto-mode",
        "mixed-auto-mode",
        "node-group-kms",
    ],
)
def test_no_open_findings(tmp_path, settings, context):
    app = cdk.App(outdir=str(tmp_path), context=context)
    GpuPoolStack(app, "Nag", settings=AppSettings.model_validate(settings))
    apply_aws_solutions(app)
    app.synth()  # raises on any open finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    plugins = {p["pluginName"]: p for p in report["pluginReports"]}
    assert {name: p["conclusion"] for name, p in plugins.items()}["AwsSolutions"] == "success"
    assert all(p["conclusion"] == "success" and not p.get("violations") for p in plugins.values())
    acknowledged = plugins["AwsSolutions"]["suppressedViolations"]
    assert acknowledged and all(f["reason"].strip() for f in acknowledged)


def test_nag_form_spells_intrinsics_as_cdk_nag_does():
    arn = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":eks:",
                {"Ref": "AWS::Region"},
                ":nodegroup/",
                {"Ref": "ClusterX"},
                "/*/*",
            ],
        ]
    }
    assert nag_form(arn) == "arn:<AWS::Partition>:eks:<AWS::Region>:nodegroup/<ClusterX>/*/*"
    assert nag_form({"Fn::GetAtt": ["Fn1", "Arn"]}) == "<Fn1.Arn>"
    assert nag_form({"Fn::If": ["C", "a", {"Ref": "AWS::NoValue"}]}) == (
        '{"Fn::If":["C","a",{"Ref":"AWS::NoValue"}]}'
    )


def test_every_acknowledged_managed_policy_has_a_reason():
    assert all(reason.strip() for reason in MANAGED_POLICY_REASONS.values())


def test_a_library_users_own_nag_run_finds_nothing_in_gpu_pools_constructs(tmp_path):
    """A user app with AwsSolutionsChecks: every open finding is on the user's own cluster
    (aws-cdk-lib's roles and VPC, theirs to judge), none on what gpu-pool built: the
    CloudWatch metrics' agent role acknowledges its managed policy itself (it had relied on the
    bundled stack's stack-wide acknowledgement)."""
    import cdk_nag

    from gpu_pool import (
        ClusterAutoscaler,
        GpuMetrics,
        GpuNodePool,
        Karpenter,
        KarpenterNodePool,
        MetricsSettings,
        PoolSettings,
    )
    from tests.support.user_app import user_cluster

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "User")
    cluster = user_cluster(stack, name="ml")
    subnets = cluster.vpc.private_subnets
    GpuNodePool(stack, "Pool", cluster=cluster, subnets=subnets, settings=PoolSettings())
    ClusterAutoscaler(stack, "Autoscaler", cluster=cluster)
    karpenter = Karpenter(stack, "Karpenter", cluster=cluster)
    KarpenterNodePool(
        stack,
        "Batch",
        karpenter=karpenter,
        subnets=subnets,
        settings=PoolSettings(name="batch", provisioner="karpenter"),
    )
    GpuMetrics(stack, "Metrics", cluster=cluster, settings=MetricsSettings(gpu="cloudwatch"))
    cdk.Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match=r"^ValidationFailed: "):
        app.synth()  # on the user's own cluster's findings
    report = json.loads((tmp_path / "validation-report.json").read_text())
    (plugin,) = report["pluginReports"]
    paths = {
        construct["constructPath"]
        for violation in plugin["violations"]
        for construct in violation["violatingConstructs"]
    }
    assert paths and all(path.startswith("User/Cluster/") for path in paths), paths
    assert "User/Cluster/EksPodIdentityAgentAddon/Resource" not in paths
