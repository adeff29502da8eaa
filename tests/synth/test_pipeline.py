"""The fleet's deployment engine (docs/pipeline.md): examples/pipeline, three clusters in two
accounts and three Regions, synthesized once with cdk-nag, is what these tests read."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from aws_cdk import aws_iam as iam

from gpu_pool.cdk.pipeline import GpuPoolPipeline
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.cdk.cluster.verifier import Verifier
from gpu_pool.settings import AppSettings, ConfigError
from gpu_pool.settings.pipeline import PipelineSettings
from tests.support.cfn import unvalidated_app
from tests.support.cli_env import without_aws
from tests.support.paths import ROOT
from tests.support.pipeline_example import EXAMPLE, example_pipeline_out
from tests.support.settings import EXISTING

PIPELINE_ACCOUNT = "111111111111"
CONNECTION = (
    "arn:aws:codeconnections:us-east-1:111111111111:connection/"
    "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)
SOURCE = {"connection_arn": CONNECTION, "repository": "acme/gpu-fleet"}


@pytest.fixture(scope="session")
def pipeline_out() -> Path:
    """The example pipeline app's cloud assembly directory, synthesized (with cdk-nag) once."""
    return example_pipeline_out()


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def pipeline_template(pipeline_out):
    return _json(pipeline_out / "GpuPoolPipeline.template.json")


@pytest.fixture(scope="session")
def cluster_stacks(pipeline_out):
    """{stack name: (environment, template)} of each stage's cluster stack."""
    stacks = {}
    for stage in sorted(pipeline_out.glob("assembly-GpuPoolPipeline-*")):
        for artifact_id, artifact in _json(stage / "manifest.json")["artifacts"].items():
            if artifact["type"] == "aws:cloudformation:stack":
                template = _json(stage / artifact["properties"]["templateFile"])
                name = artifact["properties"]["stackName"]
                stacks[name] = (artifact["environment"], template)
    return stacks


def _of_type(template, type_name):
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_name}


def _pipeline(template):
    (pipeline,) = _of_type(template, "AWS::CodePipeline::Pipeline").values()
    return pipeline["Properties"]


def test_the_pipeline_stack_is_in_the_tooling_account_and_region(pipeline_out):
    artifact = _json(pipeline_out / "manifest.json")["artifacts"]["GpuPoolPipeline"]
    assert artifact["environment"] == f"aws://{PIPELINE_ACCOUNT}/us-east-1"


def test_it_builds_from_the_connection_then_mutates_itself_then_deploys_the_waves_in_order(
    pipeline_template,
):
    stages = {
        stage["Name"]: [action["Name"] for action in stage["Actions"]]
        for stage in _pipeline(pipeline_template)["Stages"]
    }
    # A wave of one stage is named by that stage (aws-cdk-lib pipelines).
    assert list(stages) == [
        "Source",
        "Build",
        "UpdatePipeline",
        "Assets",
        "GpuInference-us-east-1",
        "Wave2",
    ]
    assert stages["UpdatePipeline"] == ["SelfMutate"]
    assert stages["GpuInference-us-east-1"] == [
        "GpuInference-us-east-1.Prepare",
        "GpuInference-us-east-1.Deploy",
        "VerifyGpuInference-us-east-1",
    ]
    assert sorted(stages["Wave2"]) == sorted(
        [
            f"{stack}.{step}"
            for stack in ("GpuInference-eu-west-1", "GpuTraining-us-west-2")
            for step in (f"{stack}.Prepare", f"{stack}.Deploy", f"Verify{stack}")
        ]
    )
    (source,) = _pipeline(pipeline_template)["Stages"][0]["Actions"]
    assert source["Configuration"] == {
        "ConnectionArn": CONNECTION,
        "FullRepositoryId": "acme/gpu-fleet",
        "BranchName": "main",
    }


def test_the_synth_installs_at_the_root_and_synthesizes_the_apps_directory(pipeline_template):
    """The repository's requirements.txt and gpu-pool itself (`.`, which the app imports: the
    requirements do not name it) and package-lock.json are at its root; the app, and the cloud
    assembly the pipeline deploys, in examples/pipeline."""
    (project,) = [
        r["Properties"]
        for r in _of_type(pipeline_template, "AWS::CodeBuild::Project").values()
        if r["Properties"]["Description"].endswith("/Build/Synth")
    ]
    spec = json.loads(project["Source"]["BuildSpec"])
    assert spec["phases"]["install"]["commands"] == [
        "python -m pip install -r requirements.txt .",
        "npm ci",
    ]
    assert spec["phases"]["build"]["commands"] == ["cd examples/pipeline", "npx cdk synth"]
    assert spec["artifacts"]["base-directory"] == "examples/pipeline/cdk.out"
    assert project["Environment"]["PrivilegedMode"] is False


def test_each_verify_step_runs_after_its_clusters_deploy_and_reads_its_role_from_the_stack(
    pipeline_template,
):
    actions = {
        action["Name"]: action
        for stage in _pipeline(pipeline_template)["Stages"]
        for action in stage["Actions"]
    }
    verify = actions["GpuInference-eu-west-1.VerifyGpuInference-eu-west-1"]
    deploy = actions["GpuInference-eu-west-1.GpuInference-eu-west-1.Deploy"]
    assert verify["RunOrder"] > deploy["RunOrder"]
    (variable,) = json.loads(verify["Configuration"]["EnvironmentVariables"])
    assert variable["name"] == "VERIFY_ROLE_ARN"
    assert variable["value"].endswith(".VerifierRoleArn}")


def _verify_project(template, stack):
    (project,) = [
        r["Properties"]
        for r in _of_type(template, "AWS::CodeBuild::Project").values()
        if r["Properties"]["Description"].endswith(f"Verify{stack}")
    ]
    return project


def test_the_verify_step_assumes_the_clusters_role_and_verifies_every_pool(pipeline_template):
    project = _verify_project(pipeline_template, "GpuTraining-us-west-2")
    spec = json.loads(project["Source"]["BuildSpec"])
    # At the repository's root, where requirements.txt is.
    assert spec["phases"]["install"]["commands"] == ["python -m pip install -r requirements.txt ."]
    assert spec["phases"]["build"]["commands"] == [
        'aws configure set profile.gpu-pool-verify.role_arn "$VERIFY_ROLE_ARN"',
        "aws configure set profile.gpu-pool-verify.credential_source EcsContainer",
        "aws eks update-kubeconfig --name gpu-training --region us-west-2 --profile "
        "gpu-pool-verify",
        "AWS_PROFILE=gpu-pool-verify gpu-pool verify --stack GpuTraining-us-west-2 --pool "
        "training --namespace default",
        "AWS_PROFILE=gpu-pool-verify gpu-pool verify --stack GpuTraining-us-west-2 --pool debug "
        "--namespace default",
    ]
    env = {v["Name"]: v["Value"] for v in project["Environment"]["EnvironmentVariables"]}
    assert env == {
        "AWS_REGION": "us-west-2",
        "AWS_DEFAULT_REGION": "us-west-2",
    }
    # verify's stage timeouts of two pools, one after the other, and the install.
    assert project["TimeoutInMinutes"] == 90
    # No Docker: gpu-pool's assets are files.
    assert project["Environment"]["PrivilegedMode"] is False


def test_the_verify_steps_role_may_assume_only_its_own_clusters_verify_role(
    pipeline_template,
):
    """Fails before: any role under role/gpu-pool-verify/* of the cluster's account, so a step
    could assume another cluster's verify role in that account."""
    project = _verify_project(pipeline_template, "GpuTraining-us-west-2")
    role_id = project["ServiceRole"]["Fn::GetAtt"][0]
    # Under the path and by the name its cluster's verify role trusts.
    step_role = pipeline_template["Resources"][role_id]["Properties"]
    assert (step_role["Path"], step_role["RoleName"]) == (
        "/gpu-pool-verify-step/",
        "GpuPoolPipeline-GpuTraining-us-west-2-step",
    )
    (policy,) = [
        r["Properties"]["PolicyDocument"]
        for r in _of_type(pipeline_template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    assume = [s for s in policy["Statement"] if s["Action"] == "sts:AssumeRole"]
    assert assume == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Resource": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":iam::222222222222:role/gpu-pool-verify/GpuTraining-us-west-2-verify",
                    ],
                ]
            },
        }
    ]


def test_cross_account_keys_encrypt_the_artifacts_when_a_cluster_is_in_another_account(
    pipeline_template,
):
    stores = _pipeline(pipeline_template)["ArtifactStores"]
    assert {s["Region"] for s in stores} == {"us-east-1", "eu-west-1", "us-west-2"}
    assert all(s["ArtifactStore"]["EncryptionKey"]["Type"] == "KMS" for s in stores)
    keys = _of_type(pipeline_template, "AWS::KMS::Key")
    assert [k["Properties"]["EnableKeyRotation"] for k in keys.values()] == [True]


def test_no_key_when_every_cluster_is_in_the_pipelines_account():
    """A customer-managed key costs a month's fee; one account needs none (cross_account_keys
    off: the artifact bucket keeps S3's own encryption)."""
    app = unvalidated_app()
    stack = GpuPoolPipeline(
        app,
        "OneAccount",
        settings=PipelineSettings(
            account=PIPELINE_ACCOUNT,
            region="us-east-1",
            source=SOURCE,
            verify=False,
        ),
        clusters=[AppSettings(account=PIPELINE_ACCOUNT, region="us-east-1")],
    )
    template = app.synth().get_stack_by_name(stack.stack_name).template
    assert _of_type(template, "AWS::KMS::Key") == {}
    assert "EncryptionKey" not in _pipeline(template)["ArtifactStore"]
    # verify: false: no verify step, and no verify role in the cluster stack.
    names = [a["Name"] for s in _pipeline(template)["Stages"] for a in s["Actions"]]
    assert not [n for n in names if "Verify" in n]
    cluster = stack.stacks["GpuPool"]
    assert cluster.node.try_find_child("Verifier") is None


def _use_connection(template):
    """The source action role's UseConnection statements, as (action, resource)."""
    (policy,) = [
        r["Properties"]["PolicyDocument"]
        for k, r in _of_type(template, "AWS::IAM::Policy").items()
        if k.startswith("PipelineSource")
    ]
    return [
        (s["Action"], s["Resource"])
        for s in policy["Statement"]
        if str(s["Action"]).endswith(":UseConnection")
    ]


def test_the_source_uses_a_connection_through_the_action_of_its_arns_own_prefix(
    pipeline_template,
):
    """Developer Tools console user guide, "Connections rename - Summary of changes": "the
    service prefix needs to match that of the resource". aws-cdk-lib 2.275.0 grants
    codestar-connections:UseConnection whatever the ARN; a codeconnections ARN gets its own
    action too (fails before: the first run failed at Source). The IAM simulation evaluates it
    (tests/synth/test_iam_simulation.py, pipeline/PipelineSource...)."""
    assert ("codeconnections:UseConnection", CONNECTION) in _use_connection(pipeline_template)
    older = CONNECTION.replace("codeconnections", "codestar-connections")
    app = unvalidated_app()
    stack = GpuPoolPipeline(
        app,
        "Older",
        settings=PipelineSettings(
            account=PIPELINE_ACCOUNT,
            region="us-east-1",
            source={**SOURCE, "connection_arn": older},
            verify=False,
        ),
        clusters=[AppSettings(account=PIPELINE_ACCOUNT, region="us-east-1")],
    )
    template = app.synth().get_stack_by_name(stack.stack_name).template
    # aws-cdk-lib's own statement alone: nothing granted twice, no codeconnections action.
    assert _use_connection(template) == [("codestar-connections:UseConnection", older)]


def test_each_cluster_deploys_as_its_own_stack_name_into_its_own_environment(cluster_stacks):
    """The stack name a `cdk deploy` of the cluster's file gives it: the pipeline takes over
    clusters deployed from a laptop instead of creating new ones."""
    assert {name: env for name, (env, _) in cluster_stacks.items()} == {
        "GpuInference-us-east-1": "aws://111111111111/us-east-1",
        "GpuInference-eu-west-1": "aws://222222222222/eu-west-1",
        "GpuTraining-us-west-2": "aws://222222222222/us-west-2",
    }


def test_each_cluster_stack_has_a_verify_role_the_pipeline_account_assumes(cluster_stacks):
    _, template = cluster_stacks["GpuInference-eu-west-1"]
    roles = {
        k: r["Properties"]
        for k, r in _of_type(template, "AWS::IAM::Role").items()
        if r["Properties"].get("Path") == "/gpu-pool-verify/"
    }
    ((role_id, role),) = roles.items()
    # Named from the stack's name, so that the pipeline's step names it exactly.
    assert role["RoleName"] == "GpuInference-eu-west-1-verify"
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {
                "AWS": {
                    "Fn::Join": [
                        "",
                        ["arn:", {"Ref": "AWS::Partition"}, f":iam::{PIPELINE_ACCOUNT}:root"],
                    ]
                }
            },
            # Only this cluster's verify step's role, not another cluster's step (fails
            # before: every role under gpu-pool-verify-step/) nor any principal of its account.
            "Condition": {
                "ArnEquals": {
                    "aws:PrincipalArn": {
                        "Fn::Join": [
                            "",
                            [
                                "arn:",
                                {"Ref": "AWS::Partition"},
                                f":iam::{PIPELINE_ACCOUNT}:role/gpu-pool-verify-step/"
                                "GpuPoolPipeline-GpuInference-eu-west-1-step",
                            ],
                        ]
                    }
                }
            },
        }
    ]
    (policy,) = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for r in _of_type(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    assert {json.dumps(s["Action"]): s["Resource"] for s in policy} == {
        '"eks:DescribeCluster"': {"Fn::GetAtt": ["ClusterEB0386A7", "Arn"]},
        '"cloudformation:DescribeStacks"': {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":cloudformation:eu-west-1:222222222222:stack/GpuInference-eu-west-1/*",
                ],
            ]
        },
        '["autoscaling:DescribeScalingActivities", "ec2:DescribeCapacityReservations"]': "*",
    }
    assert template["Outputs"]["VerifierRoleArn"]["Value"] == {"Fn::GetAtt": [role_id, "Arn"]}


def test_its_access_entry_writes_only_the_smoke_pods_namespace_and_reads_through_its_group(
    cluster_stacks,
):
    """Fails before: AmazonEKSAdminViewPolicy cluster-wide (every resource, Secrets included)
    and no Kubernetes group."""
    _, template = cluster_stacks["GpuTraining-us-west-2"]
    (role_id,) = [
        k
        for k, r in _of_type(template, "AWS::IAM::Role").items()
        if r["Properties"].get("Path") == "/gpu-pool-verify/"
    ]
    (entry,) = [
        r["Properties"]
        for r in _of_type(template, "AWS::EKS::AccessEntry").values()
        if r["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [role_id, "Arn"]}
    ]
    assert entry["AccessPolicies"] == [
        {
            "AccessScope": {"Type": "namespace", "Namespaces": ["default"]},
            "PolicyArn": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":eks::aws:cluster-access-policy/AmazonEKSEditPolicy",
                    ],
                ]
            },
        }
    ]
    assert entry["KubernetesGroups"] == ["gpu-pool-verify-gputraining-us-west-2"]


def test_its_group_reads_exactly_what_verify_reads_cluster_wide(cluster_stacks):
    """The ClusterRole, applied through the cluster's kubectl provider: verify's cluster-wide
    reads (cli/commands/verify/, cli/inspect/), read verbs only, no Secrets nor ConfigMaps; bound to
    the group the access entry names (fails before: no such manifest)."""
    _, template = cluster_stacks["GpuTraining-us-west-2"]
    (manifest,) = [
        json.loads(r["Properties"]["Manifest"])
        for k, r in _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource").items()
        if k.startswith("VerifierReads")
    ]
    role, binding = manifest
    name = "gpu-pool-verify-gputraining-us-west-2"
    read = ["get", "list", "watch"]
    assert (role["kind"], role["metadata"]["name"]) == ("ClusterRole", name)
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": read},
        {"apiGroups": ["apps"], "resources": ["daemonsets", "deployments"], "verbs": read},
        {"apiGroups": ["karpenter.sh"], "resources": ["nodeclaims", "nodepools"], "verbs": read},
        # A stalled pool's node class (fails before: verify's diagnosis got a 403).
        {"apiGroups": ["karpenter.k8s.aws"], "resources": ["ec2nodeclasses"], "verbs": read},
        {"apiGroups": ["eks.amazonaws.com"], "resources": ["nodeclasses"], "verbs": read},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices", "resourceclaims", "deviceclasses"],
            "verbs": read,
        },
        {"apiGroups": ["resource.nvidia.com"], "resources": ["computedomains"], "verbs": read},
    ]
    assert binding["kind"] == "ClusterRoleBinding"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": name,
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}
    ]


def _sorted(policies):
    return sorted(json.dumps(p, sort_keys=True) for p in policies)


def test_cdk_nag_finds_nothing_unacknowledged_in_the_pipeline_or_the_clusters(pipeline_out):
    report = _json(pipeline_out / "validation-report.json")
    plugins = {p["pluginName"]: p for p in report["pluginReports"]}
    assert {"AwsSolutions", "GpuPool"} <= set(plugins)
    assert all(p["conclusion"] == "success" and not p.get("violations") for p in plugins.values())
    acknowledged = plugins["AwsSolutions"]["suppressedViolations"]
    assert all(f["reason"].strip() for f in acknowledged)
    # The pipeline's findings and the clusters' (in the stages' nested assemblies) alike.
    where = {
        c["constructPath"].split("/")[1] for f in acknowledged for c in f["violatingConstructs"]
    }
    assert {"Pipeline", "GpuInference-us-east-1", "GpuTraining-us-west-2"} <= where


def test_no_docker_image_assets_anywhere(pipeline_out):
    """CDK Pipelines would need Docker in its asset stage for an image asset."""
    asset_files = list(pipeline_out.glob("**/*.assets.json"))
    assert len(asset_files) == 4  # the pipeline's and each cluster's
    assert all(not _json(f).get("dockerImages") for f in asset_files)


@pytest.mark.cli_synth
def test_the_example_synthesizes_with_the_pinned_cdk_cli_and_no_credentials(tmp_path):
    """As the pipeline's synth step runs it: `cdk synth` in examples/pipeline (its cdk.json:
    `python3 app.py`), with no AWS credentials. The clusters' zone lookups are answered by the
    context in examples/pipeline/cdk.json, so each cluster gets its Region's three zones."""
    env = without_aws(tmp_path / "home")
    # A copy, as the CLI writes cdk.context.json beside cdk.json.
    project = tmp_path / "pipeline"
    shutil.copytree(EXAMPLE.parent, project, ignore=shutil.ignore_patterns("cdk.out*"))
    out = tmp_path / "cdk.out"
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    synth = [str(cli), "synth", "--quiet", "--no-notices", "--no-version-reporting", "-o", str(out)]
    done = subprocess.run(synth, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    zones = {}
    for template_file in out.glob("assembly-*/*.template.json"):
        template = _json(template_file)
        subnets = _of_type(template, "AWS::EC2::Subnet").values()
        zones[template_file.parent.name] = sorted(
            {s["Properties"]["AvailabilityZone"] for s in subnets}
        )
    assert zones == {
        f"assembly-GpuPoolPipeline-{stack}": [f"{region}{zone}" for zone in "abc"]
        for stack, region in (
            ("GpuInference-us-east-1", "us-east-1"),
            ("GpuInference-eu-west-1", "eu-west-1"),
            ("GpuTraining-us-west-2", "us-west-2"),
        )
    }


def test_a_long_stack_name_gives_a_verify_role_name_within_iams_limit():
    """IAM role names are at most 64 characters (IAM User Guide, IAM object quotas); a stack
    name may be 128. The name stays deterministic and distinct."""
    from gpu_pool.cdk.cluster.verifier import verifier_role_name

    long_a, long_b = "A" * 100 + "-us-east-1", "A" * 100 + "-us-west-2"
    assert verifier_role_name("GpuInference-eu-west-1") == "GpuInference-eu-west-1-verify"
    names = {verifier_role_name(long_a), verifier_role_name(long_b)}
    assert len(names) == 2 and all(len(n) == 64 and n.startswith("A" * 55) for n in names)
    assert verifier_role_name(long_a) == verifier_role_name(long_a)


def test_wrong_arguments_are_one_line_each_naming_what_would_do():
    app = unvalidated_app()
    with pytest.raises(ConfigError) as raised:
        GpuPoolStack(
            app, "Wrong", settings=AppSettings(), verifier=iam.AccountPrincipal(PIPELINE_ACCOUNT)
        )
    assert str(raised.value) == (
        "GpuPoolStack 'Wrong': verifier: got an aws_iam.AccountPrincipal; expected Verifier"
    )
    settings = PipelineSettings(account=PIPELINE_ACCOUNT, region="us-east-1", source=SOURCE)
    with pytest.raises(ConfigError) as raised:
        GpuPoolPipeline(app, "Wrong2", settings=settings, clusters=[{"stack_name": "A"}])
    assert str(raised.value) == (
        "GpuPoolPipeline 'Wrong2': clusters: got [{'stack_name': 'A'}]; expected a list of "
        "AppSettings (for a dict of settings: AppSettings(**that_dict))"
    )


def test_an_existing_cluster_gets_the_verify_role_and_access_entry_by_its_name():
    """A cluster the app imports: the access entry and DescribeCluster name it (its
    authentication mode must include the API, docs/pipeline.md)."""
    app = unvalidated_app()
    stack = GpuPoolStack(
        app,
        "Existing",
        settings=AppSettings.model_validate(EXISTING),
        verifier=Verifier(iam.AccountPrincipal(PIPELINE_ACCOUNT), namespace="smoke"),
    )
    template = app.synth().get_stack_by_name(stack.stack_name).template
    (entry,) = [
        r["Properties"]
        for r in _of_type(template, "AWS::EKS::AccessEntry").values()
        if "Verifier" in json.dumps(r["Properties"]["PrincipalArn"])
    ]
    assert entry["ClusterName"] == "platform-prod"
    assert {"Type": "namespace", "Namespaces": ["smoke"]} in [
        p["AccessScope"] for p in entry["AccessPolicies"]
    ]
    # A namespace no cluster has is created before the Role in it, or kubectl apply fails the
    # deploy with `namespaces "smoke" not found` (fails before: no Namespace).
    (writes,) = [
        json.loads(r["Properties"]["Manifest"])
        for k, r in _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource").items()
        if k.startswith("VerifierWrites")
    ]
    assert [(o["kind"], o["metadata"].get("namespace")) for o in writes] == [
        ("Namespace", None),
        ("Role", "smoke"),
        ("RoleBinding", "smoke"),
    ]
    assert writes[0]["metadata"]["name"] == "smoke"
    statements = [
        s
        for r in _of_type(template, "AWS::IAM::Policy").values()
        if "Verifier" in json.dumps(r["Properties"]["Roles"])
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert statements[0] == {
        "Action": "eks:DescribeCluster",
        "Effect": "Allow",
        "Resource": {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":eks:eu-west-1:123456789012:cluster/platform-prod",
                ],
            ]
        },
    }


def test_only_the_pipelines_verify_steps_may_assume_a_clusters_verify_role(
    pipeline_template, cluster_stacks
):
    """Both sides of the cross-account AssumeRole, evaluated by the IAM simulator: the verify
    step's own policy (which role ARNs it may assume) and the verify role's trust (which
    callers). aws:PrincipalArn is the caller's role ARN with its path (IAM user guide, global
    condition keys), which the trust's condition matches."""
    from tests.support.iam_simulation import resolve, simulate

    _, cluster = cluster_stacks["GpuInference-eu-west-1"]
    (verify_role,) = [
        k
        for k, r in _of_type(cluster, "AWS::IAM::Role").items()
        if r["Properties"].get("Path") == "/gpu-pool-verify/"
    ]
    trust = resolve(cluster, cluster["Resources"][verify_role]["Properties"]["AssumeRolePolicyDocument"])
    project = _verify_project(pipeline_template, "GpuInference-eu-west-1")
    step_role = project["ServiceRole"]["Fn::GetAtt"][0]
    (assume,) = [
        s
        for r in _of_type(pipeline_template, "AWS::IAM::Policy").values()
        if {"Ref": step_role} in r["Properties"]["Roles"]
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "sts:AssumeRole"
    ]
    step_policy = {"Version": "2012-10-17", "Statement": [resolve(pipeline_template, assume)]}
    anything = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}],
    }

    def assume_role(
        identity,
        caller_path,
        target_account="222222222222",
        caller_name="GpuPoolPipeline-GpuInference-eu-west-1-step",
        target="GpuInference-eu-west-1-verify",
    ):
        caller = f"arn:aws:iam::{PIPELINE_ACCOUNT}:role{caller_path}{caller_name}"
        return {
            "identityPolicies": [{"name": "caller", "policy": identity}],
            "serviceControlPolicies": [],
            "resourceControlPolicies": [],
            "resourcePolicy": trust,
            "request": {
                "principal": f"arn:aws:sts::{PIPELINE_ACCOUNT}:assumed-role/Caller/verify",
                "action": "sts:AssumeRole",
                "resource": {
                    "resource": f"arn:aws:iam::{target_account}:role/gpu-pool-verify/{target}",
                    "accountId": target_account,
                },
                "contextVariables": {"aws:PrincipalArn": caller},
            },
        }

    outcomes = simulate(
        [
            # The verify step's role, under its path: allowed.
            assume_role(step_policy, "/gpu-pool-verify-step/"),
            # Any other role of the tooling account, even one allowed every AssumeRole.
            assume_role(anything, "/"),
            # The step itself, on a verify role in an account not its cluster's.
            assume_role(step_policy, "/gpu-pool-verify-step/", target_account="333333333333"),
            # The step, on another cluster's verify role in its cluster's account (fails
            # before: role/gpu-pool-verify/* allowed it).
            assume_role(step_policy, "/gpu-pool-verify-step/", target="GpuTraining-us-west-2-verify"),
            # Another cluster's step (its role allows every AssumeRole here), on this cluster's
            # verify role (fails before: the trust took every step role).
            assume_role(
                anything,
                "/gpu-pool-verify-step/",
                caller_name="GpuPoolPipeline-GpuTraining-us-west-2-step",
            ),
        ]
    )
    assert [o["result"] for o in outcomes] == ["Allowed"] + ["ImplicitlyDenied"] * 4
    assert all(o["ignoredContextKeys"] == [] for o in outcomes)


def test_its_group_writes_only_the_dra_smoke_objects_in_the_smoke_namespace(cluster_stacks):
    """verify creates a DRA pool's ResourceClaimTemplate and an UltraServer pool's ComputeDomain
    (cli/smoke_test.py) beside its pod: a Role for exactly those in the smoke namespace, bound to
    the access entry's group (the EKS edit policy does not document resource.k8s.io, and a CRD's
    objects are in no built-in role). Fails before: verify could not create them."""
    _, template = cluster_stacks["GpuTraining-us-west-2"]
    (manifest,) = [
        json.loads(r["Properties"]["Manifest"])
        for k, r in _of_type(template, "Custom::AWSCDK-EKS-KubernetesResource").items()
        if k.startswith("VerifierWrites")
    ]
    role, binding = manifest  # `default` exists on every cluster: no Namespace
    name = "gpu-pool-verify-gputraining-us-west-2"
    write = ["create", "get", "list", "watch", "delete"]
    named = ("name", "namespace")
    assert (role["kind"], *map(role["metadata"].get, named)) == ("Role", name, "default")
    assert role["rules"] == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaimtemplates"], "verbs": write},
        {"apiGroups": ["resource.nvidia.com"], "resources": ["computedomains"], "verbs": write},
    ]
    assert (binding["kind"], *map(binding["metadata"].get, named)) == (
        "RoleBinding",
        name,
        "default",
    )
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}
    ]


def test_stack_takes_a_pipeline_clusters_own_stack_name(pipeline_out, capsys):
    """#39 item 6: in a pipeline's assembly a cluster's stack is a stage's, named by its path
    (GpuPoolPipeline/GpuTraining-us-west-2/GpuTraining-us-west-2); --stack takes the name the
    fleet gave it."""
    from gpu_pool.cli.main import main

    out = str(pipeline_out)
    for stack in ("GpuTraining-us-west-2", "GpuPoolPipeline/GpuTraining-us-west-2/GpuTraining-us-west-2"):
        assert main(["plan", "--cdk-out", out, "--stack", stack, "--output", "json"]) == 0
        pools = json.loads(capsys.readouterr().out)["pools"]
        assert {p["region"] for p in pools} == {"us-west-2"}
    assert main(["plan", "--cdk-out", out, "--stack", "GpuTraining"]) == 2
    assert "--stack: no stack 'GpuTraining'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "namespace", ["default", "kube-system", "kube-public", "kube-node-lease", "gpu-verify"]
)
def test_the_verify_namespace_is_the_stacks_only_if_no_cluster_has_it(namespace):
    """#38 item 9: a namespace the stack creates is the stack's, and goes with it. Kubernetes'
    own (the NamespaceLifecycle admission plugin's immortal default, kube-system and
    kube-public; kube-node-lease, which the node lease controller needs) must never be: the
    stack would own kube-system and, on delete, try to remove it."""
    from gpu_pool.cdk.cluster.verifier import verify_writes_manifest

    kinds = [m["kind"] for m in verify_writes_manifest("GpuPool", namespace)]
    system = namespace != "gpu-verify"
    assert ("Namespace" in kinds) is not system
    (role,) = [m for m in verify_writes_manifest("GpuPool", namespace) if m["kind"] == "Role"]
    assert role["metadata"]["namespace"] == namespace


def test_a_fact_the_synth_step_could_not_look_up_fails_it():
    """#39 item 1: a synth without credentials finishes with warnings, but a pipeline deploys
    what its synth step made, unreviewed, and that step looks nothing up: there an unchecked
    fact (here the cluster's zones, not in the context) is the stack's error, which fails
    `cdk synth`."""
    app = unvalidated_app()
    stack = GpuPoolPipeline(
        app,
        "Unchecked",
        settings=PipelineSettings(
            account=PIPELINE_ACCOUNT, region="us-east-1", source=SOURCE, verify=False
        ),
        clusters=[AppSettings(account=PIPELINE_ACCOUNT, region="us-east-1")],
    )
    cluster = stack.stacks["GpuPool"]
    errors = [str(e.data) for e in cluster.node.metadata if e.type == "aws:cdk:error"]
    assert [e.split(": not checked")[0] for e in errors] == ["cluster.zones"]
    assert errors[0].endswith(
        ". Here it stops the synth: what this synth makes is deployed without a review (context "
        "gpu-pool:unchecked-fails, which GpuPoolPipeline sets)"
    )


def test_a_fact_the_deploy_does_not_wait_for_stays_a_warning_in_the_synth_step():
    """#48 item 10: with cluster.zones set the Region's zones only judge the pools' zones (a
    warning's fact), so the synth step's missing zone lookup warns and the pipeline's synth
    goes on; only facts a deploy waits for stop it."""
    app = unvalidated_app()
    stack = GpuPoolPipeline(
        app,
        "Zoned",
        settings=PipelineSettings(
            account=PIPELINE_ACCOUNT, region="us-east-1", source=SOURCE, verify=False
        ),
        clusters=[
            AppSettings.model_validate(
                {
                    "account": PIPELINE_ACCOUNT,
                    "region": "us-east-1",
                    "cluster": {"zones": ["us-east-1a", "us-east-1b", "us-east-1c"]},
                }
            )
        ],
    )
    cluster = stack.stacks["GpuPool"]
    assert [e.data for e in cluster.node.metadata if e.type == "aws:cdk:error"] == []
    warnings = [str(e.data) for e in cluster.node.metadata if e.type == "aws:cdk:warning"]
    assert [w.split(": not checked")[0] for w in warnings if "GP-REGION-08" in w] == [
        "cluster.zones"
    ]
