"""Rules over a whole cluster run once the app is built: the order a user adds the constructs
in changes neither the findings nor the logical ids of what the cluster shares."""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
import pytest
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Annotations, Match, Template

from gpu_pool import ClusterAutoscaler, GpuNodePool, Karpenter, KarpenterNodePool, PoolSettings
from tests.support.cfn import resources, unvalidated_app
from tests.support.user_app import imported_cluster, user_cluster

BOTH_ORDERS = pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
VALIDATION_HEADER = "ValidationFailedWithErrors: Validation failed with the following errors:"


def _build(stack: cdk.Stack, steps: list[Callable[[], object]], reverse: bool) -> None:
    for step in reversed(steps) if reverse else steps:
        step()


def _synth_errors(stack: cdk.Stack) -> list[str]:
    """The lines CDK's validation fails the synth with ([] if it does not)."""
    try:
        cdk.App.of(stack).synth()  # type: ignore[union-attr]
    except RuntimeError as err:
        header, *lines = str(err).splitlines()
        assert header == VALIDATION_HEADER
        return [line.strip() for line in lines]
    return []


def _imported_stack():
    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = imported_cluster(stack)
    return stack, cluster, subnet


def _autoscaler(stack, cluster, construct_id="CA", **kwargs):
    return lambda: ClusterAutoscaler(
        stack, construct_id, cluster=cluster, kubernetes_version="1.35", **kwargs
    )


def _pool(stack, cluster, subnet, **settings):
    return lambda: GpuNodePool(
        stack, "Pool", cluster=cluster, subnets=[subnet], settings=PoolSettings(**settings)
    )


@BOTH_ORDERS
def test_an_autoscaler_that_would_run_on_a_gpu_pool_is_refused_in_either_order(reverse):
    stack, cluster, subnet = _imported_stack()
    selector = {"gpu-pool.io/pool": "gpu"}
    steps = [_pool(stack, cluster, subnet), _autoscaler(stack, cluster, node_selector=selector)]
    _build(stack, steps, reverse)
    assert _synth_errors(stack) == [
        "[S/GpuPoolsC] ClusterAutoscaler 'S/CA': autoscaler.node_selector: "
        "{'gpu-pool.io/pool': 'gpu'} selects pool 'gpu', whose GPU nodes are tainted: the "
        "autoscaler pod would stay Pending there (or keep a GPU node from scaling down): select "
        "the system nodes"
    ]


@BOTH_ORDERS
def test_two_autoscalers_on_one_cluster_are_refused_in_either_order(reverse):
    stack, cluster, subnet = _imported_stack()
    steps = [
        _autoscaler(stack, cluster, "First"),
        _pool(stack, cluster, subnet),
        _autoscaler(stack, cluster, "Second"),
    ]
    _build(stack, steps, reverse)
    assert _synth_errors(stack) == [
        "[S/GpuPoolsC] autoscaler: ClusterAutoscaler is added 2 times to one cluster (S/First, "
        "S/Second); each installs Helm release 'cluster-autoscaler' in the same namespace, so "
        "all but one fail to deploy: keep one"
    ]


def test_two_karpenters_on_one_cluster_are_refused():
    stack, cluster, _ = _imported_stack()
    for construct_id in ("One", "Two"):
        Karpenter(stack, construct_id, cluster=cluster, cluster_security_group_id="sg-0a")
    assert _synth_errors(stack) == [
        "[S/GpuPoolsC] karpenter: Karpenter is added 2 times to one cluster (S/One, S/Two); "
        "each installs Helm release 'karpenter' in the same namespace, so all but one fail to "
        "deploy: keep one"
    ]


MIN_ZERO_WARNING = (
    "pool.min_size: 0, and no ClusterAutoscaler is added to this cluster: nothing starts the "
    "pool's first node unless a Cluster Autoscaler already runs on the cluster; add "
    "ClusterAutoscaler, or a min_size above 0 [ack: gpu-pool:GP-CTRL-10]"
)


def _min_size_warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("no ClusterAutoscaler")
    )
    return [f"{w.id}: {w.entry.data}" for w in found]


@pytest.mark.parametrize(
    ("autoscaler", "min_size", "warned"),
    [
        ("none", 0, True),
        ("none", 1, False),
        ("before", 0, False),
        ("after", 0, False),
    ],
)
def test_a_pool_at_min_zero_with_nothing_to_scale_it_is_warned_about(autoscaler, min_size, warned):
    stack, cluster, subnet = _imported_stack()
    steps = [_pool(stack, cluster, subnet, min_size=min_size, desired_size=min_size)]
    if autoscaler != "none":
        steps.insert(0 if autoscaler == "before" else 1, _autoscaler(stack, cluster))
    _build(stack, steps, reverse=False)
    assert _min_size_warnings(stack) == ([f"/S/Pool: {MIN_ZERO_WARNING}"] if warned else [])


def test_a_karpenter_pool_needs_no_autoscaler():
    stack, cluster, subnet = _imported_stack()
    karpenter = Karpenter(stack, "K", cluster=cluster, cluster_security_group_id="sg-0a")
    KarpenterNodePool(
        stack,
        "Batch",
        karpenter=karpenter,
        subnets=[subnet],
        settings=PoolSettings(name="batch", provisioner="karpenter"),
    )
    assert _min_size_warnings(stack) == []


@BOTH_ORDERS
def test_the_pod_identity_agent_keeps_one_logical_id_whichever_controller_comes_first(reverse):
    stack = cdk.Stack(unvalidated_app(), "S")
    cluster = user_cluster(stack, name="ml")
    steps = [
        lambda: ClusterAutoscaler(stack, "CA", cluster=cluster),
        lambda: Karpenter(stack, "K", cluster=cluster),
    ]
    _build(stack, steps, reverse)
    template = Template.from_stack(stack)
    addons = resources(template, "AWS::EKS::Addon")
    # The cluster's own add-on (aws-cdk-lib's Cluster.eks_pod_identity_agent): one per cluster.
    assert list(addons) == ["ClusterEksPodIdentityAgentAddonEF717E32"]
    controllers = [
        r
        for r in resources(template, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Release"] in ("cluster-autoscaler", "karpenter")
    ]
    assert len(controllers) == 2
    assert all("ClusterEksPodIdentityAgentAddonEF717E32" in c["DependsOn"] for c in controllers)


def test_the_agent_is_the_one_aws_cdk_libs_pod_identity_service_accounts_use():
    stack = cdk.Stack(unvalidated_app(), "S")
    cluster = user_cluster(stack, name="ml")
    cluster.add_service_account("App", identity_type=eks.IdentityType.POD_IDENTITY)
    ClusterAutoscaler(stack, "CA", cluster=cluster)
    addons = resources(Template.from_stack(stack), "AWS::EKS::Addon")
    assert [a["Properties"]["AddonName"] for a in addons.values()] == ["eks-pod-identity-agent"]


@BOTH_ORDERS
def test_an_imported_clusters_agent_is_added_once_beside_its_registry(reverse):
    stack, cluster, _ = _imported_stack()
    steps = [
        _autoscaler(stack, cluster, install_pod_identity_agent=True),
        lambda: Karpenter(
            stack,
            "K",
            cluster=cluster,
            cluster_security_group_id="sg-0a",
            install_pod_identity_agent=True,
        ),
    ]
    _build(stack, steps, reverse)
    addons = resources(Template.from_stack(stack), "AWS::EKS::Addon")
    assert [(k, a["Properties"]) for k, a in addons.items()] == [
        (
            "GpuPoolsCPodIdentityAgentAFA4BC5D",
            {
                "AddonName": "eks-pod-identity-agent",
                "ClusterName": "platform",
                # Named after its stack: a later lookup leaves it to this stack alone.
                "Tags": [{"Key": "gpu-pool.io/created-by", "Value": "S"}],
            },
        )
    ]
