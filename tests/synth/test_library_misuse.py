"""Library misuse (#29 item 2): each mistake a user makes composing the constructs is one
ConfigError line naming the construct, the argument and what would be valid, not a traceback
from inside aws-cdk-lib or jsii."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_eks as eks_v1
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Annotations, Match

from gpu_pool import (
    AutoModeNodePool,
    ClusterAutoscaler,
    ConfigError,
    GpuMetrics,
    GpuNodePool,
    GpuPoolStack,
    Karpenter,
    KarpenterNodePool,
    MetricsSettings,
    PoolSettings,
)
from tests.support.cfn import unvalidated_app
from tests.support.paths import ROOT
from tests.support.rules import documented
from tests.support.user_app import imported_cluster, user_cluster

VALIDATION_HEADER = "ValidationFailedWithErrors: Validation failed with the following errors:"
AUTO_MODE = PoolSettings(name="auto", provisioner="auto-mode", instance_types=["g6.xlarge"])
IMPORT_KUBECTL = (
    "import it with kubectl_provider=aws_eks_v2.KubectlProvider.from_kubectl_provider_attributes"
    "(...) (the service token of its kubectl handler function and the role that handler runs as)"
)
NODECLASS_NEEDS_AUTO_MODE = (
    "without it the deploy fails where it applies the pool's NodeClass (eks.amazonaws.com/v1, a "
    "kind only Auto Mode serves)"
)


def _error(build) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        build()
    return str(raised.value).splitlines()


@pytest.fixture
def stack():
    return cdk.Stack(unvalidated_app(), "S")


def _without_kubectl(stack):
    """A cluster imported by name only, as its docs' first example does."""
    cluster = eks.Cluster.from_cluster_attributes(stack, "Bare", cluster_name="platform")
    _, subnet = imported_cluster(stack)
    return cluster, subnet


def test_settings_given_as_a_dict_name_the_model_to_build(stack):
    cluster, subnet = imported_cluster(stack)
    assert _error(
        lambda: GpuNodePool(
            stack, "Pool", cluster=cluster, subnets=[subnet], settings={"name": "inference"}
        )
    ) == [
        "GpuNodePool 'S/Pool': settings: got {'name': 'inference'}; expected PoolSettings (for a "
        "dict of settings: PoolSettings(**that_dict)) or PoolPlan"
    ]


def test_the_bundled_stack_refuses_a_dict_of_settings_too():
    assert _error(lambda: GpuPoolStack(unvalidated_app(), "Gpu", settings={"pool": {}})) == [
        "GpuPoolStack 'Gpu': settings: got {'pool': {}}; expected AppSettings (for a dict of "
        "settings: AppSettings(**that_dict))"
    ]


def test_every_wrong_argument_is_one_line(stack):
    _, subnet = imported_cluster(stack)
    assert _error(
        lambda: GpuNodePool(stack, "Pool", cluster="platform", subnets=subnet, tags={"team": 1})
    ) == [
        "GpuNodePool 'S/Pool': cluster: got 'platform'; expected aws_eks_v2.ICluster (an "
        "aws_eks_v2.Cluster, or one imported with aws_eks_v2.Cluster.from_cluster_attributes)",
        "GpuNodePool 'S/Pool': subnets: got an object of aws_ec2.ISubnet; expected a list of "
        "aws_ec2.ISubnet",
        "GpuNodePool 'S/Pool': tags: got {'team': 1}; expected a dict of str to str",
    ]


def test_a_cluster_of_the_older_aws_eks_module_is_named_as_such(stack):
    cluster = eks_v1.Cluster.from_cluster_attributes(stack, "V1", cluster_name="platform")
    assert _error(lambda: ClusterAutoscaler(stack, "CA", cluster=cluster)) == [
        "ClusterAutoscaler 'S/CA': cluster: got an object of aws_eks.ICluster; expected "
        "aws_eks_v2.ICluster (an aws_eks_v2.Cluster, or one imported with "
        "aws_eks_v2.Cluster.from_cluster_attributes)"
    ]


def test_a_karpenter_pool_given_the_cluster_instead_of_karpenter(stack):
    cluster, subnet = imported_cluster(stack)
    settings = PoolSettings(provisioner="karpenter")
    assert _error(
        lambda: KarpenterNodePool(
            stack, "Batch", karpenter=cluster, subnets=[subnet], settings=settings
        )
    ) == ["KarpenterNodePool 'S/Batch': karpenter: got an object of aws_eks_v2.ICluster; expected Karpenter"]



def test_an_argument_a_construct_does_not_take_is_named_with_what_it_takes(stack):
    """#48 item 7: `cluster=` on KarpenterNodePool was a bare TypeError."""
    cluster, subnet = imported_cluster(stack)
    settings = PoolSettings(provisioner="karpenter")
    assert _error(
        lambda: KarpenterNodePool(stack, "Batch", cluster=cluster, subnets=[subnet], settings=settings)
    ) == [
        "KarpenterNodePool 'S/Batch': cluster: not an argument of it; it takes scope and "
        "construct_id by position, then by keyword karpenter, subnets, settings, tags, vpc",
        "KarpenterNodePool 'S/Batch': karpenter: missing; expected Karpenter",
    ]


def test_a_mistyped_argument_is_named_with_the_closest_one(stack):
    cluster, subnet = imported_cluster(stack)
    assert _error(lambda: GpuNodePool(stack, "Pool", cluster=cluster, subnet=[subnet])) == [
        "GpuNodePool 'S/Pool': subnet: not an argument of it (did you mean subnets?); it takes "
        "scope and construct_id by position, then by keyword cluster, subnets, settings, "
        "node_role, tags, kubernetes_version, vpc, cluster_security_group_id",
        "GpuNodePool 'S/Pool': subnets: missing; expected a list of aws_ec2.ISubnet",
    ]


def test_arguments_by_position_past_the_id_are_named(stack):
    """#48 item 7: positional arguments were a bare TypeError."""
    cluster, subnet = imported_cluster(stack)
    assert _error(lambda: ClusterAutoscaler(stack, "CA", cluster)) == [
        "ClusterAutoscaler 'S/CA': 3 arguments by position; it takes scope and construct_id by "
        "position, then by keyword cluster, settings, kubernetes_version, node_selector, "
        "install_pod_identity_agent",
        "ClusterAutoscaler 'S/CA': cluster: missing; expected aws_eks_v2.ICluster (an "
        "aws_eks_v2.Cluster, or one imported with aws_eks_v2.Cluster.from_cluster_attributes)",
    ]


def test_the_library_page_shows_the_messages_the_code_prints():
    """docs/library.md's sample messages, built as the page describes them."""
    page = (ROOT / "docs" / "library.md").read_text()
    stack = cdk.Stack(unvalidated_app(), "MlPlatform")
    cluster, subnet = imported_cluster(stack)
    printed = [
        *_error(
            lambda: GpuNodePool(
                stack, "Inference", cluster=cluster, subnets=[subnet], settings={"name": "inference"}
            )
        ),
        *_error(
            lambda: KarpenterNodePool(
                stack,
                "Batch",
                cluster=cluster,
                subnets=[subnet],
                settings=PoolSettings(name="batch", provisioner="karpenter"),
            )
        ),
        *_error(
            lambda: GpuNodePool(
                stack,
                "Training",
                cluster=cluster,
                subnets=[subnet],
                settings=PoolSettings(name="training", desired_size=3, max_size=2),
            )
        ),
    ]
    samples = [
        line
        for block in page.split("```text\n")[1:]
        for line in block.split("\n```")[0].splitlines()
        if line.startswith(("GpuNodePool", "KarpenterNodePool"))
    ]
    assert samples == printed

def test_a_scope_that_is_not_a_construct():
    assert _error(lambda: ClusterAutoscaler("S", "CA", cluster=None, node_selector="system")) == [
        "ClusterAutoscaler 'CA': scope: got 'S'; expected constructs.Construct",
        "ClusterAutoscaler 'CA': cluster: got None; expected aws_eks_v2.ICluster (an "
        "aws_eks_v2.Cluster, or one imported with aws_eks_v2.Cluster.from_cluster_attributes)",
        "ClusterAutoscaler 'CA': node_selector: got 'system'; expected a dict of str to str",
    ]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda s, c, n: GpuNodePool(s, "Pool", cluster=c, subnets=[n]),
            "GpuNodePool 'S/Pool': cluster: has no kubectl provider, which installs the pool's "
            "GPU software chart",
        ),
        (
            lambda s, c, n: ClusterAutoscaler(s, "CA", cluster=c, kubernetes_version="1.35"),
            "ClusterAutoscaler 'S/CA': cluster: has no kubectl provider, which installs Cluster "
            "Autoscaler's chart",
        ),
        (
            lambda s, c, n: Karpenter(s, "K", cluster=c, cluster_security_group_id="sg-0a"),
            "Karpenter 'S/K': cluster: has no kubectl provider, which installs Karpenter's charts",
        ),
        (
            lambda s, c, n: AutoModeNodePool(
                s, "Auto", cluster=c, subnets=[n], settings=AUTO_MODE, security_group_id="sg-0a"
            ),
            "AutoModeNodePool 'S/Auto': cluster: has no kubectl provider, which installs the "
            "pool's NodePool and NodeClass",
        ),
        (
            lambda s, c, n: GpuMetrics(
                s, "Metrics", cluster=c, settings=MetricsSettings(gpu="dcgm-exporter")
            ),
            "GpuMetrics 'S/Metrics': cluster: has no kubectl provider, which installs the "
            "dcgm-exporter chart",
        ),
    ],
    ids=["GpuNodePool", "ClusterAutoscaler", "Karpenter", "AutoModeNodePool", "GpuMetrics"],
)
def test_a_cluster_imported_without_a_kubectl_provider(stack, build, message):
    cluster, subnet = _without_kubectl(stack)
    assert _error(lambda: build(stack, cluster, subnet)) == [f"{message}: {IMPORT_KUBECTL}"]


def test_a_created_cluster_without_a_kubectl_provider_names_the_layer(stack):
    cluster = eks.Cluster(
        stack,
        "Cluster",
        version=eks.KubernetesVersion.V1_35,
        default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
        default_capacity=0,
    )
    assert _error(lambda: ClusterAutoscaler(stack, "CA", cluster=cluster)) == [
        "ClusterAutoscaler 'S/CA': cluster: has no kubectl provider, which installs Cluster "
        "Autoscaler's chart: create it with kubectl_provider_options=aws_eks_v2."
        "KubectlProviderOptions(kubectl_layer=...), the lambda_layer_kubectl layer of its "
        "Kubernetes minor (e.g. aws_cdk.lambda_layer_kubectl_v35.KubectlV35Layer)"
    ]


def test_an_auto_mode_pool_on_a_cluster_without_auto_mode_compute(stack):
    cluster = user_cluster(stack)  # node groups, no Auto Mode
    subnets = cluster.vpc.private_subnets
    assert _error(
        lambda: AutoModeNodePool(stack, "Auto", cluster=cluster, subnets=subnets, settings=AUTO_MODE)
    ) == [
        "AutoModeNodePool 'S/Auto': cluster: has no EKS Auto Mode compute, which an "
        "AutoModeNodePool needs: create the aws_eks_v2.Cluster with "
        "default_capacity_type=DefaultCapacityType.AUTOMODE and "
        "compute=ComputeConfig(node_pools=[]) (Auto Mode without its built-in node pools), or "
        f"render the pool with GpuNodePool or KarpenterNodePool; {NODECLASS_NEEDS_AUTO_MODE}"
    ]


def test_the_rules_on_a_library_cluster_are_in_the_guardrails_index():
    from gpu_pool import plan_pool
    from gpu_pool.checks.library import check_auto_mode_compute, check_operator_exporter

    assert check_auto_mode_compute(True) == []
    assert [f.rule for f in documented(check_auto_mode_compute(None))] == ["GP-LIB-01"]
    assert [f.rule for f in documented(check_auto_mode_compute(False))] == ["GP-LIB-02"]
    operator = plan_pool(PoolSettings(gpu_software="gpu-operator"))
    found = documented(check_operator_exporter("cloudwatch", operator))
    assert [f.rule for f in found] == ["GP-LIB-03"]


def test_an_auto_mode_pool_on_an_imported_cluster_warns_that_it_needs_auto_mode(stack):
    cluster, subnet = imported_cluster(stack)
    AutoModeNodePool(
        stack, "Auto", cluster=cluster, subnets=[subnet], settings=AUTO_MODE, security_group_id="sg-0a"
    )
    warnings = Annotations.from_stack(stack).find_warning("/S/Auto", Match.any_value())
    assert [w.entry.data for w in warnings] == [
        "cluster: imported or given its ComputeConfig as a token, so the synth cannot see "
        "whether it has EKS Auto Mode compute enabled (aws eks describe-cluster: "
        "cluster.computeConfig.enabled true); "
        f"{NODECLASS_NEEDS_AUTO_MODE} [ack: gpu-pool:GP-LIB-01]"
    ]


def test_an_auto_mode_pool_on_a_cluster_whose_compute_config_is_a_token_warns(stack):
    """A ComputeConfig the synth cannot read (a parameter's value) is the imported cluster's
    case: a warning the app may acknowledge, not GP-LIB-02's error, which it cannot."""
    cluster = user_cluster(stack)
    enabled = cdk.CfnParameter(stack, "AutoMode", type="String", allowed_values=["true", "false"])
    resource = cluster.node.default_child
    resource.compute_config = eks.CfnCluster.ComputeConfigProperty(
        enabled=cdk.Token.as_any(enabled.value)
    )
    AutoModeNodePool(
        stack, "Auto", cluster=cluster, subnets=cluster.vpc.private_subnets, settings=AUTO_MODE
    )
    warnings = Annotations.from_stack(stack).find_warning("/S/Auto", Match.any_value())
    assert [w.entry.data for w in warnings] == [
        "cluster: imported or given its ComputeConfig as a token, so the synth cannot see "
        "whether it has EKS Auto Mode compute enabled (aws eks describe-cluster: "
        f"cluster.computeConfig.enabled true); {NODECLASS_NEEDS_AUTO_MODE} [ack: gpu-pool:GP-LIB-01]"
    ]


def _synth_errors(app: cdk.App) -> list[str]:
    """The lines CDK's validation fails the synth with ([] if it does not)."""
    try:
        app.synth()
    except RuntimeError as err:
        header, *lines = str(err).splitlines()
        assert header == VALIDATION_HEADER
        return [line.strip() for line in lines]
    return []


def _two_stacks_importing_one_cluster(second_env=None):
    app = unvalidated_app()
    env = cdk.Environment(account="123456789012", region="us-east-1")
    stacks = [cdk.Stack(app, "Inference", env=env), cdk.Stack(app, "Training", env=second_env or env)]
    for stack in stacks:
        cluster, subnet = imported_cluster(stack)
        GpuNodePool(stack, "Pool", cluster=cluster, subnets=[subnet], settings=PoolSettings(name=stack.stack_name.lower()))
        ClusterAutoscaler(stack, "Autoscaler", cluster=cluster, kubernetes_version="1.35")
    return app


def test_two_stacks_each_adding_an_autoscaler_to_one_imported_cluster_fail_the_synth():
    assert _synth_errors(_two_stacks_importing_one_cluster()) == [
        "[Inference/GpuPoolsC] cluster 'platform' in stacks 'Inference', 'Training' (one name, "
        "account, Region): autoscaler: ClusterAutoscaler is added 2 times to one cluster "
        "(Inference/Autoscaler, Training/Autoscaler); each installs Helm release "
        "'cluster-autoscaler' in the same namespace, so all but one fail to deploy: keep one"
    ]


def test_imports_of_one_name_in_another_region_are_another_cluster():
    other = cdk.Environment(account="123456789012", region="eu-west-1")
    assert _synth_errors(_two_stacks_importing_one_cluster(other)) == []


def test_gpu_metrics_refuse_none_and_a_second_construct_on_one_cluster(stack):
    cluster, _ = imported_cluster(stack)
    assert _error(
        lambda: GpuMetrics(stack, "None", cluster=cluster, settings=MetricsSettings())
    ) == [
        "GpuMetrics 'S/None': metrics.gpu: 'none' installs nothing; choose 'dcgm-exporter' or "
        "'cloudwatch', or leave GpuMetrics out"
    ]
    GpuMetrics(stack, "First", cluster=cluster, settings=MetricsSettings(gpu="cloudwatch"))
    assert _error(
        lambda: GpuMetrics(
            stack, "Second", cluster=cluster, settings=MetricsSettings(gpu="dcgm-exporter")
        )
    ) == [
        "GpuMetrics 'S/Second': cluster: has GPU metrics already (GpuMetrics 'S/First'); each "
        "installs the same release or add-on, so one of them would fail to deploy: keep one"
    ]


def test_gpu_metrics_warn_at_synth_about_pool_types_the_add_on_misses(stack):
    cluster, subnet = imported_cluster(stack)
    GpuMetrics(stack, "Metrics", cluster=cluster, settings=MetricsSettings(gpu="cloudwatch"))
    GpuNodePool(stack, "Pool", cluster=cluster, subnets=[subnet], settings=PoolSettings(instance_types=["g6f.large"]))
    warnings = Annotations.from_stack(stack).find_warning("/S/Metrics", Match.any_value())
    assert [w.entry.data.rsplit("[ack: ", 1)[1] for w in warnings] == ["gpu-pool:GP-METRICS-02]"]


@pytest.mark.parametrize(
    ("gpu", "planned_for", "what"),
    [
        (
            "cloudwatch",
            "another choice",
            "the operator's own DCGM exporter would run beside the add-on's, two DCGM host "
            "engines contending for the GPUs' profiling metrics",
        ),
        (
            "dcgm-exporter",
            "cloudwatch",
            "its operator runs no DCGM exporter and dcgm-exporter leaves GPU Operator nodes to "
            "it, so the pool's nodes would send no GPU metrics",
        ),
    ],
)
def test_a_gpu_operator_pool_planned_for_other_metrics_fails_the_synth(gpu, planned_for, what):
    from gpu_pool import plan_pool

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = imported_cluster(stack)
    other = "none" if gpu == "cloudwatch" else "cloudwatch"
    plan = plan_pool(PoolSettings(gpu_software="gpu-operator"), metrics=other)
    GpuNodePool(stack, "Pool", cluster=cluster, subnets=[subnet], settings=plan)
    GpuMetrics(stack, "Metrics", cluster=cluster, settings=MetricsSettings(gpu=gpu))
    assert _synth_errors(cdk.App.of(stack)) == [
        f"[S/GpuPoolsC] GpuMetrics 'S/Metrics': pool.gpu_software: 'gpu-operator' on a cluster "
        f"whose GpuMetrics is '{gpu}', but the pool was planned for {planned_for}: {what}; plan "
        f"it with plan_pool(settings, metrics='{gpu}')"
    ]


def test_a_gpu_operator_pool_planned_for_the_clusters_metrics_passes():
    from gpu_pool import plan_pool

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = imported_cluster(stack)
    plan = plan_pool(PoolSettings(gpu_software="gpu-operator"), metrics="cloudwatch")
    GpuNodePool(stack, "Pool", cluster=cluster, subnets=[subnet], settings=plan)
    GpuMetrics(stack, "Metrics", cluster=cluster, settings=MetricsSettings(gpu="cloudwatch"))
    assert _synth_errors(cdk.App.of(stack)) == []


def _nothing_starts_the_pool(autoscaler_in_other_stack: bool) -> list[str]:
    """The GP-CTRL-10 warnings on a pool at min_size 0 in one stack, the cluster imported again
    in another, which adds the cluster's ClusterAutoscaler or not."""
    app = unvalidated_app()
    env = cdk.Environment(account="123456789012", region="us-east-1")
    pools, platform = cdk.Stack(app, "Pools", env=env), cdk.Stack(app, "Platform", env=env)
    cluster, subnet = imported_cluster(pools)
    GpuNodePool(pools, "Pool", cluster=cluster, subnets=[subnet])
    other, _ = imported_cluster(platform)
    if autoscaler_in_other_stack:
        ClusterAutoscaler(platform, "CA", cluster=other, kubernetes_version="1.35")
    app.synth()
    warnings = Annotations.from_stack(pools).find_warning("/Pools/Pool", Match.any_value())
    return [w.entry.data for w in warnings if "[ack: gpu-pool:GP-CTRL-10]" in w.entry.data]


def test_an_autoscaler_on_another_import_of_the_cluster_scales_a_pool():
    """A pool at min_size 0 in one stack, the cluster's ClusterAutoscaler in another: no
    'nothing starts the pool's first node' warning (GP-CTRL-10), since one runs there."""
    assert _nothing_starts_the_pool(autoscaler_in_other_stack=True) == []


def test_without_an_autoscaler_in_either_stack_the_pool_warns_once():
    """The control case: the same stacks without the ClusterAutoscaler warn, once, at the pool."""
    assert len(_nothing_starts_the_pool(autoscaler_in_other_stack=False)) == 1


AGENT_MISSING = (
    "pool.repair: on, but the app adds no eks-node-monitoring-agent add-on to the cluster: "
    "without the agent no node reports AcceleratedHardwareReady, so a broken GPU is neither "
    "found nor repaired. Add it (gpu_pool.node_monitoring_agent(scope, cluster): the add-on at "
    "gpu-pool's pinned version and configuration), or, where the cluster runs it already (aws "
    "eks describe-addon --addon-name eks-node-monitoring-agent), acknowledge gpu-pool:GP-LIB-04 "
    "[ack: gpu-pool:GP-LIB-04]"
)


def _agent_warnings(add_agent: bool | str, repair: bool = True) -> list[str]:
    """`add_agent`: True (aws_eks_v2.Addon in the pool's stack), "v1" (aws_eks.CfnAddon),
    "other-stack" (in a platform stack of the same app), False (none)."""
    app = unvalidated_app()
    stack = cdk.Stack(app, "S")
    cluster, subnet = imported_cluster(stack)
    settings = PoolSettings() if repair else PoolSettings(repair={"enabled": False})
    GpuNodePool(stack, "Pool", cluster=cluster, subnets=[subnet], settings=settings)
    if add_agent is True:
        eks.Addon(stack, "Agent", cluster=cluster, addon_name="eks-node-monitoring-agent")
    elif add_agent == "v1":
        eks_v1.CfnAddon(stack, "Agent", cluster_name="c", addon_name="eks-node-monitoring-agent")
    elif add_agent == "other-stack":
        platform = cdk.Stack(app, "Platform")
        eks_v1.CfnAddon(
            platform, "Agent", cluster_name="c", addon_name="eks-node-monitoring-agent"
        )
    warnings = Annotations.from_stack(stack).find_warning("/S/Pool", Match.any_value())
    return [w.entry.data for w in warnings if "GP-LIB-04" in w.entry.data]


def test_a_repairing_pool_without_the_agent_add_on_warns():
    """Review of #36: a library app's GpuNodePool turned repair on (NodeRepairConfig) with no
    agent to report the conditions it acts on, and said nothing."""
    assert _agent_warnings(add_agent=False) == [AGENT_MISSING]
    from gpu_pool import plan_pool
    from gpu_pool.checks.library import check_repair_agent

    (finding,) = documented(check_repair_agent(plan_pool(PoolSettings())))
    assert finding.rule == "GP-LIB-04"


def test_the_agent_added_in_the_app_or_repair_off_is_no_warning():
    assert _agent_warnings(add_agent=True) == []
    # Review of #39: through aws_eks's L1, or in another stack of the app, it counts too.
    assert _agent_warnings(add_agent="v1") == []
    assert _agent_warnings(add_agent="other-stack") == []
    assert _agent_warnings(add_agent=False, repair=False) == []


def test_the_page_names_the_error_of_an_offline_zone_lookup_and_the_key_that_avoids_it():
    """#48 item 7: a library app whose stack has an account and Region stops offline on
    aws-cdk-lib's own zone lookup (the CLI's failed lookup, `$providerError`, becomes the stack's
    error), which docs/library.md did not say; the context key it gives answers the lookup."""
    from aws_cdk import aws_ec2 as ec2

    page = (ROOT / "docs" / "library.md").read_text()
    offline = page.split("## Synthesizing without credentials")[1].split("\n## ")[0]
    (message,) = [b.split("\n```")[0].strip() for b in offline.split("```text\n")[1:]]
    (example,) = [b.split("\n```")[0] for b in offline.split("```yaml\n")[1:]]
    key = next(iter(yaml.safe_load(example)))
    env = cdk.Environment(account="123456789012", region="us-east-1")

    failed = {"$providerError": message, "$dontSaveContext": True}
    stack = cdk.Stack(unvalidated_app(context={key: failed}), "MlPlatform", env=env)
    ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a", "us-east-1b"])
    assert [e.data for e in stack.node.metadata if e.type == "aws:cdk:error"] == [message]

    stack = cdk.Stack(unvalidated_app(context=yaml.safe_load(example)), "MlPlatform", env=env)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=3)
    assert [e.type for e in stack.node.metadata if e.type == "aws:cdk:error"] == []
    assert vpc.availability_zones == ["us-east-1a", "us-east-1b", "us-east-1c"]


@pytest.mark.parametrize("id_keyword", ["id", "construct_id"])
def test_constructs_take_scope_and_id_by_keyword_as_aws_cdk_libs_do(stack, id_keyword):
    """#53 item 13: aws-cdk-lib's constructs take `scope=` and `id=` by keyword in Python; the
    pool and the autoscaler are built at the path those name, and a mistake then is named at
    that path."""
    cluster, subnet = imported_cluster(stack)
    pool = GpuNodePool(
        scope=stack,
        cluster=cluster,
        subnets=[subnet],
        settings=PoolSettings(instance_types=["g6.xlarge"]),
        **{id_keyword: "Inference"},
    )
    autoscaler = ClusterAutoscaler(
        scope=stack, cluster=cluster, kubernetes_version="1.35", **{id_keyword: "CA"}
    )
    assert (pool.node.path, autoscaler.node.path) == ("S/Inference", "S/CA")
    assert _error(
        lambda: GpuNodePool(scope=stack, cluster=cluster, subnet=[subnet], **{id_keyword: "P"})
    )[0].startswith("GpuNodePool 'S/P': subnet: not an argument of it (did you mean subnets?)")
