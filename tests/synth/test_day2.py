"""Day 2: what a redeploy with changed settings does to a running pool, read from templates."""

from __future__ import annotations

import pytest

from gpu_pool.cdk.nodegroups.scaling import RESOURCE_TYPE as SCALING
from tests.support.cfn import helm_values, only, resources, synth, unvalidated_app


def _gpu_nodegroup(template):
    return only(
        {k: v for k, v in resources(template, "AWS::EKS::Nodegroup").items() if "GpuPool" in k}
    )[1]


def test_min_and_max_changes_never_reach_the_node_groups_desired_size(default_template):
    resized = synth({"pool": {"min_size": 1, "desired_size": 1, "max_size": 16}})
    before, after = _gpu_nodegroup(default_template), _gpu_nodegroup(resized)
    # The node group's ScalingConfig is the same constant in both: CloudFormation has nothing
    # to send to EKS, so no desired size is pushed onto a group the autoscaler scaled.
    assert (
        before["Properties"]["ScalingConfig"]
        == after["Properties"]["ScalingConfig"]
        == {
            "MinSize": 0,
            "DesiredSize": 0,
            "MaxSize": 8,
        }
    )
    scaling_before = only(resources(default_template, SCALING))[1]["Properties"]
    scaling_after = only(resources(resized, SCALING))[1]["Properties"]
    assert (scaling_before["MinSize"], scaling_before["MaxSize"]) == (0, 8)
    assert (scaling_after["MinSize"], scaling_after["MaxSize"]) == (1, 16)
    # The starting size only matters at creation (the handler ignores it on update).
    assert (scaling_before["DesiredSizeOnCreate"], scaling_after["DesiredSizeOnCreate"]) == (0, 1)


def _pod_checksum(template):
    charts = resources(template, "Custom::AWSCDK-EKS-HelmChart").values()
    (chart,) = [c for c in charts if c["Properties"]["Release"] == "cluster-autoscaler"]
    values = helm_values(chart)
    return values["podAnnotations"]["gpu-pool.io/node-templates-checksum"]


@pytest.mark.parametrize(
    "changed",
    [
        {"labels": {"accelerator": "nvidia", "workload": "batch"}},
        {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoExecute"}]},
        {"instance_types": ["g5.12xlarge"]},  # 4 GPUs per node instead of 1
    ],
    ids=["label", "taint", "gpu-count"],
)
def test_the_autoscaler_pod_restarts_when_a_node_template_changes(default_template, changed):
    assert len(_pod_checksum(default_template)) == 16
    assert _pod_checksum(synth({"pool": changed})) != _pod_checksum(default_template)


def test_the_autoscaler_pod_stays_when_only_sizes_change(default_template):
    resized = synth({"pool": {"min_size": 1, "desired_size": 1, "max_size": 16}})
    assert _pod_checksum(resized) == _pod_checksum(default_template)


def test_an_upgrade_moves_node_groups_autoscaler_and_kubectl_together():
    seen = {}
    for minor in ("1.35", "1.36"):
        template = synth({"cluster": {"kubernetes_version": minor}})
        nodegroups = resources(template, "AWS::EKS::Nodegroup").values()
        charts = resources(template, "Custom::AWSCDK-EKS-HelmChart").values()
        (autoscaler,) = [c for c in charts if c["Properties"]["Release"] == "cluster-autoscaler"]
        layers = resources(template, "AWS::Lambda::LayerVersion").values()
        seen[minor] = (
            only(resources(template, "AWS::EKS::Cluster"))[1]["Properties"]["Version"],
            sorted({n["Properties"]["Version"] for n in nodegroups}),
            helm_values(autoscaler)["image"]["tag"],
            [
                d.split()[1]
                for d in (layer["Properties"].get("Description", "") for layer in layers)
                if d.startswith("/opt/kubectl/kubectl ")
            ],
        )
        # GPU groups replace a node at a time, terminating before launching: no extra GPUs.
        for nodegroup in nodegroups:
            if "gpu-pool.io/pool" in nodegroup["Properties"]["Labels"]:
                assert nodegroup["Properties"]["UpdateConfig"] == {
                    "MaxUnavailable": 1,
                    "UpdateStrategy": "MINIMAL",
                }
            assert nodegroup["Properties"].get("ForceUpdateEnabled", False) is False
    assert seen["1.35"][:3] == ("1.35", ["1.35"], "v1.35.2")
    assert seen["1.36"][:3] == ("1.36", ["1.36"], "v1.36.1")
    assert [v.rsplit(".", 1)[0] for v in seen["1.35"][3]] == ["1.35"]
    assert [v.rsplit(".", 1)[0] for v in seen["1.36"][3]] == ["1.36"]


def test_zones_outside_the_cached_availability_zones_are_refused_before_building():
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import ConfigError, load_settings

    app = unvalidated_app(
        context={
            "availability-zones:account=123456789012:region=us-east-1": [
                "us-east-1a",
                "us-east-1b",
                "us-east-1c",
            ]
        }
    )
    settings = {"region": "us-east-1", "account": "123456789012", "pool": {"zones": ["us-east-1q"]}}
    with pytest.raises(ConfigError) as raised:
        GpuPoolStack(app, "Zones", settings=load_settings(settings, None))
    assert str(raised.value) == (
        "pool.zones: 'us-east-1q' is not an availability zone of us-east-1 this account has "
        "(us-east-1a, us-east-1b, us-east-1c, from cdk.context.json): choose among them"
    )
    (stack,) = app.node.children
    assert stack.node.children == []
