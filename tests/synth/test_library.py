"""gpu-pool as another CDK app uses it: the public API, composed into a stack of the user's own."""

from __future__ import annotations

import inspect
import typing

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from aws_cdk.assertions import Template

import gpu_pool
from gpu_pool import AutoscalerSettings, ClusterAutoscaler, ConfigError, GpuNodePool, PoolSettings
from gpu_pool.cdk.nodegroups.asg_tags import RESOURCE_TYPE
from tests.support.cfn import render, resources, unvalidated_app
from tests.support.user_app import imported_cluster, user_cluster

NODE_ROLE_ARN = "arn:aws:iam::123456789012:role/platform-gpu-nodes"


@pytest.fixture(scope="module")
def user_stack():
    """A user's stack: their own AwsCustomResource FIRST, then a cluster, a pool, the autoscaler."""
    app = unvalidated_app()
    stack = cdk.Stack(app, "UserStack")
    cr.AwsCustomResource(
        stack,
        "UsersOwnLookup",
        on_create=cr.AwsSdkCall(
            service="SSM",
            action="GetParameter",
            parameters={"Name": "/team/setting"},
            physical_resource_id=cr.PhysicalResourceId.of("lookup"),
        ),
        policy=cr.AwsCustomResourcePolicy.from_sdk_calls(
            resources=cr.AwsCustomResourcePolicy.ANY_RESOURCE
        ),
        install_latest_aws_sdk=False,
    )
    cluster = user_cluster(stack)
    vpc = cluster.vpc
    pool = GpuNodePool(
        stack,
        "Pool",
        cluster=cluster,
        subnets=vpc.private_subnets,
        settings=PoolSettings(name="inference", ami_release_version="1.35.2-20261120"),
        node_role=iam.Role.from_role_arn(stack, "NodeRole", NODE_ROLE_ARN, mutable=False),
        tags={"cost-center": "ml"},
    )
    autoscaler = ClusterAutoscaler(stack, "Autoscaler", cluster=cluster)
    return pool, autoscaler, Template.from_stack(stack)


def test_the_tag_writer_runs_with_its_own_statements_after_a_users_aws_custom_resource(
    user_stack,
):
    *_, template = user_stack
    functions = resources(template, "AWS::Lambda::Function")
    ((_, tags),) = resources(template, RESOURCE_TYPE).items()
    # Custom resource -> provider framework function -> the handler it invokes -> its role.
    framework_id = render(tags["Properties"]["ServiceToken"]).removeprefix("<GetAtt:")
    framework = functions[framework_id.split(".")[0]]
    handler_arn = framework["Properties"]["Environment"]["Variables"]["USER_ON_EVENT_FUNCTION_ARN"]
    handler = functions[render(handler_arn).removeprefix("<GetAtt:").split(".")[0]]
    role_id = render(handler["Properties"]["Role"]).removeprefix("<GetAtt:").split(".")[0]
    actions = {
        action
        for policy in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in _as_list(statement["Action"])
    }
    assert {
        "eks:DescribeNodegroup",
        "autoscaling:CreateOrUpdateTags",
        "autoscaling:DeleteTags",
    } <= (actions)
    assert "ssm:GetParameter" not in actions  # the user's grant stays on the user's Lambda


def _as_list(value):
    return value if isinstance(value, list) else [value]


def test_a_pool_uses_the_users_node_role_tags_and_ami_release(user_stack):
    *_, template = user_stack
    ((_, nodegroup),) = resources(template, "AWS::EKS::Nodegroup").items()
    props = nodegroup["Properties"]
    assert props["NodeRole"] == NODE_ROLE_ARN
    assert props["ReleaseVersion"] == "1.35.2-20261120"
    assert props["Tags"] == {"cost-center": "ml"}
    assert not [k for k in resources(template, "AWS::IAM::Role") if k.startswith("PoolNodeRole")]


def test_a_pool_exposes_what_other_constructs_compose_with(user_stack):
    pool, _, template = user_stack
    stack = cdk.Stack.of(pool)
    ((tags_id, _),) = resources(template, RESOURCE_TYPE).items()
    assert [render(stack.resolve(name)) for name in pool.asg_names] == [
        f"<GetAtt:{tags_id}.AsgName>"
    ]
    assert pool.workload_node_selector == {"gpu-pool.io/pool": "inference"}
    assert pool.workload_tolerations == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert pool.node_role.role_arn == NODE_ROLE_ARN


def test_autoscaler_alone_takes_version_region_and_a_token_name_from_theuser_cluster(user_stack):
    *_, template = user_stack
    charts = resources(template, "Custom::AWSCDK-EKS-HelmChart")
    (chart,) = [c for c in charts.values() if c["Properties"]["Chart"] == "cluster-autoscaler"]
    values = render(chart["Properties"]["Values"])
    assert '"clusterName":"<Ref:ClusterEB0386A7>"' in values
    assert '"image":{"tag":"v1.35.' in values
    assert '"awsRegion":"<Ref:AWS::Region>"' in values
    # A cluster created in the same app gets the add-on the Pod Identity association needs.
    addons = resources(template, "AWS::EKS::Addon").values()
    assert [a["Properties"]["AddonName"] for a in addons] == ["eks-pod-identity-agent"]


def _autoscaler_error(**kwargs: typing.Any) -> str:
    app = unvalidated_app()
    stack = cdk.Stack(app, "S")
    cluster, _ = imported_cluster(stack)
    with pytest.raises(ConfigError) as raised:
        ClusterAutoscaler(stack, "CA", cluster=cluster, **kwargs)
    return str(raised.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"settings": AutoscalerSettings(image_tag="latest"), "kubernetes_version": "1.35"},
            "autoscaler.image_tag: 'latest' is not an exact version; pin one such as 1.2.3 "
            "(never 'latest' or a range), or leave it unset for the tested pin in "
            "gpu_pool/model/versions.py",
        ),
        (
            {"settings": AutoscalerSettings(chart_version="9.x"), "kubernetes_version": "1.35"},
            "autoscaler.chart_version: '9.x' is not an exact version; pin one such as 1.2.3 "
            "(never 'latest' or a range), or leave it unset for the tested pin in "
            "gpu_pool/model/versions.py",
        ),
        (
            {},
            "cluster.kubernetes_version: unknown for an imported cluster, so no Cluster "
            "Autoscaler image can be chosen (its minor must equal the cluster's): pass "
            "kubernetes_version or set autoscaler.image_tag",
        ),
        (
            {"settings": AutoscalerSettings(image_tag="v1.34.3"), "kubernetes_version": "1.35"},
            "autoscaler.image_tag: 'v1.34.3' does not match the cluster's minor 1.35; Cluster "
            "Autoscaler supports only its own minor: use a v1.35.x tag",
        ),
    ],
    ids=["latest", "chart-range", "unknown-version", "wrong-minor"],
)
def test_autoscaler_checks_its_own_pins(kwargs, message):
    assert _autoscaler_error(**kwargs) == f"ClusterAutoscaler 'S/CA': {message}"


def test_settings_with_a_wrong_type_raise_config_error_naming_the_setting():
    with pytest.raises(ConfigError) as raised:
        PoolSettings(max_size="8")  # type: ignore[arg-type]
    assert str(raised.value) == "max_size: must be a whole number (got '8')"


def test_public_api_has_no_any():
    """Every public name is importable and typed without Any in its signature or fields."""
    found = {}
    for name in gpu_pool.__all__:
        obj = getattr(gpu_pool, name)
        target = obj.__init__ if inspect.isclass(obj) else obj
        if inspect.isclass(obj) and issubclass(obj, Exception):
            continue
        hints = typing.get_type_hints(target)
        if inspect.isclass(obj) and hasattr(obj, "model_fields"):
            hints = {f: info.annotation for f, info in obj.model_fields.items()}
        found[name] = [k for k, hint in hints.items() if "typing.Any" in str(hint)]
    assert {name: keys for name, keys in found.items() if keys} == {}


def test_zones_with_subnets_whose_zones_are_tokens_raise_config_error():
    app = unvalidated_app()
    stack = cdk.Stack(app, "S")
    cluster, _ = imported_cluster(stack)
    subnet = ec2.Subnet.from_subnet_attributes(
        stack,
        "Sub",
        subnet_id="subnet-0aaaaaaaaaaaaaaaa",
        availability_zone=cdk.Fn.select(0, cdk.Fn.get_azs()),
    )
    with pytest.raises(ConfigError) as raised:
        GpuNodePool(
            stack,
            "P",
            cluster=cluster,
            subnets=[subnet],
            settings=PoolSettings(zones=["us-east-1a"]),
        )
    assert str(raised.value) == (
        "GpuNodePool 'S/P': pool.zones: the subnets' availability zones are only known at deploy "
        "time (tokens); pass subnets with literal zones (ec2.Subnet.from_subnet_attributes with "
        "availability_zone) or drop zones"
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            PoolSettings(ami_release_version="1.36.1-20261120"),
            "pool.ami_release_version: '1.36.1-20261120' is a Kubernetes 1.36 AMI, but the node "
            "groups run 1.35; EKS refuses a release of another minor: use a 1.35.x release, or "
            "none for the newest",
        ),
        (
            PoolSettings(
                volume_kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd"
            ),
            "pool.volume_kms_key_arn: the key is in eu-west-1, the pool's volumes in us-east-1; "
            "EBS encrypts a volume only with a key of its own Region, so every node launch would "
            "fail: use a key (or a multi-Region replica) in us-east-1",
        ),
    ],
    ids=["release-of-another-minor", "kms-key-in-another-region"],
)
def test_a_pool_is_checked_against_its_clusters_minor_and_its_stacks_region(settings, message):
    """The construct knows what the app's settings say: the cluster's version (1.35 here) and
    the stack's Region."""
    stack = cdk.Stack(
        unvalidated_app(), "Env", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    cluster = user_cluster(stack)
    with pytest.raises(ConfigError) as raised:
        GpuNodePool(
            stack, "Pool", cluster=cluster, subnets=cluster.vpc.private_subnets, settings=settings
        )
    assert f"GpuNodePool 'Env/Pool': {message}" in str(raised.value).splitlines()


def test_a_pools_tags_reach_its_instances_and_volumes_through_the_launch_template(user_stack):
    *_, template = user_stack
    ((_, launch_template),) = resources(template, "AWS::EC2::LaunchTemplate").items()
    # EKS copies the node group's own Tags to no instance: the template's TagSpecifications do.
    assert launch_template["Properties"]["LaunchTemplateData"]["TagSpecifications"] == [
        {"ResourceType": "instance", "Tags": [{"Key": "cost-center", "Value": "ml"}]},
        {"ResourceType": "volume", "Tags": [{"Key": "cost-center", "Value": "ml"}]},
    ]


def test_cfn_lint_accepts_the_users_stack(user_stack):
    """The user's stack, TagSpecifications included, against cfn-lint's CloudFormation schemas
    (with the project's ignore list, .cfnlintrc.yaml)."""
    from tests.support.cfn_lint import cfn_lint

    *_, template = user_stack
    assert cfn_lint(template.to_json()) == []


def _api_section() -> str:
    from tests.support.paths import ROOT

    page = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    return page.split("\n## Public API\n", 1)[1].split("\n## ", 1)[0]


def _parameters(obj: typing.Any) -> list[str]:
    """A callable's parameters as the docs write them: `name` or `name=default`, `*` before
    keyword-only ones, a construct's `construct_id` as CDK's docs call it (`id`)."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    written = []
    for parameter in inspect.signature(target).parameters.values():
        if parameter.name == "self":
            continue
        if parameter.kind is parameter.KEYWORD_ONLY and "*" not in written:
            written.append("*")
        name = "id" if parameter.name == "construct_id" else parameter.name
        default = parameter.default
        written.append(name if default is parameter.empty else f"{name}={default!r}")
    return written


def test_the_documented_api_is_the_real_one():
    """docs/library.md's Public API section names every export, and each signature it gives
    is the callable's own (names, order, defaults)."""
    import re

    section = _api_section()
    documented = {
        name: [p.strip() for p in params.split(",")]
        for name, params in re.findall(r"`(\w+)\(([^`]*)\)`", " ".join(section.split()))
        if name in gpu_pool.__all__
    }
    assert set(documented) >= {"GpuNodePool", "ClusterAutoscaler", "Karpenter", "GpuPoolStack"}
    assert {name: _parameters(getattr(gpu_pool, name)) for name in documented} == documented
    named = set(re.findall(r"`(\w+)", section))
    assert [name for name in gpu_pool.__all__ if name not in named] == []


def test_dir_lists_every_export_and_the_public_models_types_are_exported():
    from pydantic import BaseModel

    # The API and nothing else: not the module's own import_module, TYPE_CHECKING or Any (#53).
    assert dir(gpu_pool) == sorted(gpu_pool.__all__)
    reachable: set[type] = set()

    def walk(annotation: typing.Any) -> None:
        for argument in typing.get_args(annotation):
            walk(argument)
        model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        if model and annotation not in reachable:
            reachable.add(annotation)
            for field in annotation.model_fields.values():
                walk(field.annotation)

    for name in gpu_pool.__all__:
        walk(getattr(gpu_pool, name))
    assert sorted(m.__name__ for m in reachable if m.__name__ not in gpu_pool.__all__) == []


@pytest.mark.parametrize(
    "construct",
    [
        "GpuNodePool",
        "KarpenterNodePool",
        "AutoModeNodePool",
        "ClusterAutoscaler",
        "Karpenter",
        "GpuMetrics",
    ],
)
def test_each_construct_parameter_is_documented_on_one_line_with_its_default(construct):
    """As aws-cdk documents props: one `:param name:` line each, in signature order, and the
    default of every optional one; reasons go in the paragraphs after them."""
    cls = getattr(gpu_pool, construct)
    signature = inspect.signature(cls.__init__)
    names = [n for n in signature.parameters if n not in ("self", "scope", "construct_id")]
    lines = inspect.getdoc(cls).splitlines()
    params = [(i, line) for i, line in enumerate(lines) if line.startswith(":param ")]
    assert [line.split(":")[1].removeprefix("param ") for _, line in params] == names
    for index, line in params:
        following = lines[index + 1] if index + 1 < len(lines) else ""
        assert not following.startswith(" "), f"{construct}: {line!r} continues on a second line"
        name = line.split(":")[1].removeprefix("param ")
        if signature.parameters[name].default is not inspect.Parameter.empty:
            assert "Default:" in line, f"{construct}.{name}: no default named"
