"""A P6e-GB200 UltraServer training pool (docs/dra-and-ultraservers.md's example, synthesized as
the deployed pass is, with the zone lookup cached): a Capacity Block node group on the AL2023
ARM NVIDIA AMI with the NVIDIA DRA driver and no device plugin (EKS UG "Use P6e-GB200
UltraServers with Amazon EKS"; ml/capacity-blocks-mng for the launch template)."""

from __future__ import annotations

import json

import pytest

from gpu_pool.cli.smoke_test import smoke_test_objects
from gpu_pool.cli.sources import settings_pools
from gpu_pool.model.scheduling import pod_fits_node
from tests.support.cfn import helm_values, node_of, render
from tests.support.docs_examples import app_settings, as_the_app_reads, settings_example
from tests.support.dra import NAMESPACE as DRA_NAMESPACE
from tests.support.dra import POOL_LABEL, expected_driver_values
from tests.support.helm import manifests, render_vendored
from tests.support.looked_up import synth_looked_up

pytestmark = pytest.mark.synth

BLOCK = "cr-0123456789abcdef0"
DRA_CHART = "dra-driver-nvidia-gpu-0.4.1"
# The DRA driver's release for the one UltraServer pool: GPUs and ComputeDomains, the kubelet
# plugin on the pool's nodes (tolerating its default taint), the controller off every GPU pool.
DRA_VALUES = expected_driver_values(
    ["gb200"],
    [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    compute_domains=True,
)


EXAMPLE = ("docs/dra-and-ultraservers.md", "Example: a GB200 UltraServer")


@pytest.fixture
def template(tmp_path):
    return synth_looked_up(app_settings(settings_example(*EXAMPLE), tmp_path))


def _of_type(template, type_name):
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_name}


def _pools(template, type_name):
    """The pool's one resource of `type_name` (its construct is GpuPoolGb200)."""
    (resource,) = [
        r for k, r in _of_type(template, type_name).items() if k.startswith("GpuPoolGb200")
    ]
    return resource["Properties"]


def test_the_launch_template_targets_the_block_with_its_one_type(template):
    data = _pools(template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    (efa_group,) = [
        k for k in _of_type(template, "AWS::EC2::SecurityGroup") if k.startswith("GpuPoolGb200")
    ]
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": BLOCK}
    }
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["InstanceType"] == "p6e-gb200.36xlarge"
    # EC2 UG "EFA configuration for P6e-GB200 instances": card 0 carries only ENA (the primary
    # interface), and one EFA-only interface on one card of each GPU's pair of cards
    # (1, 5, 9, 13) gives the type's 1600 Gbps of EFA; every interface in the pool's EFA
    # security group and the cluster's. No placement group: the block's instances are placed.
    groups = [
        {"Fn::GetAtt": ["ClusterEB0386A7", "ClusterSecurityGroupId"]},
        {"Fn::GetAtt": [efa_group, "GroupId"]},
    ]
    interfaces = data["NetworkInterfaces"]
    assert [
        {k: v for k, v in i.items() if k != "Groups"} for i in interfaces
    ] == [
        {"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface", "DeleteOnTermination": True},
        {"NetworkCardIndex": 1, "DeviceIndex": 0, "InterfaceType": "efa-only", "DeleteOnTermination": True},
        {"NetworkCardIndex": 5, "DeviceIndex": 0, "InterfaceType": "efa-only", "DeleteOnTermination": True},
        {"NetworkCardIndex": 9, "DeviceIndex": 0, "InterfaceType": "efa-only", "DeleteOnTermination": True},
        {"NetworkCardIndex": 13, "DeviceIndex": 0, "InterfaceType": "efa-only", "DeleteOnTermination": True},
    ]
    assert all(i["Groups"] == groups for i in interfaces)
    assert "Placement" not in data


def test_the_node_group_is_a_capacity_block_group_on_the_arm_nvidia_ami(template):
    group = _pools(template, "AWS::EKS::Nodegroup")
    assert group["CapacityType"] == "CAPACITY_BLOCK"
    assert group["AmiType"] == "AL2023_ARM_64_NVIDIA"
    # The API refuses a type in both places: the block's one type is the launch template's.
    assert "InstanceTypes" not in group
    # Min and desired stay 0 until the block starts (GP-TRAIN-06/07): static capacity is sized
    # through the EKS API then (GP-DRA-11).
    scaling = _pools(template, "Custom::GpuPoolNodegroupScaling")
    sizes = {k: scaling[k] for k in ("MinSize", "MaxSize", "DesiredSizeOnCreate")}
    assert sizes == {"MinSize": 0, "MaxSize": 18, "DesiredSizeOnCreate": 0}


def test_no_device_plugin_is_installed(template):
    charts = [
        r["Properties"]
        for r in _of_type(template, "Custom::AWSCDK-EKS-HelmChart").values()
    ]
    assert charts  # Cluster Autoscaler's, at least: the query finds charts
    installed = {json.dumps(c["Chart"]) for c in charts}
    assert not installed & {'"nvidia-device-plugin"', '"gpu-operator"'}


def test_the_smoke_tests_pods_fit_the_ultraserver_groups_nodes(template, tmp_path):
    """Both IMEX pods of `gpu-pool smoke-test-manifest` select, tolerate and (through their
    required pod affinity's topology keys) can land on the synthesized group's nodes; the
    nvidia.com/gpu.clique label GPU feature discovery writes is on no DRA node."""
    (record,) = settings_pools(as_the_app_reads(settings_example(*EXAMPLE), tmp_path)).records
    pods = [o for o in smoke_test_objects(record, "smoke") if o["kind"] == "Pod"]
    labels, taints = node_of(_pools(template, "AWS::EKS::Nodegroup"))
    assert [p["metadata"]["name"] for p in pods] == ["smoke-0", "smoke-1"]
    assert [pod_fits_node(p["spec"], labels, taints) for p in pods] == [True, True]


def _dra_release(template):
    (chart,) = [
        r
        for r in _of_type(template, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == "dra-driver-nvidia-gpu"
    ]
    return chart


def test_the_dra_release_has_compute_domains_and_the_kubelet_plugin_on_the_pool(template):
    chart = _dra_release(template)
    props = chart["Properties"]
    assert (props["Version"], props["Namespace"], props["Release"]) == (
        "0.4.1",
        DRA_NAMESPACE,
        "nvidia-dra-driver-gpu",
    )
    assert helm_values(chart) == DRA_VALUES


def test_the_rendered_kubelet_plugin_runs_both_features_on_the_ultraserver_nodes_only(
    template, helm, tmp_path
):
    """The pinned chart, rendered with our values: one kubelet plugin DaemonSet with the
    ComputeDomain and GPU plugins, whose pods fit the UltraServer group's nodes and no other
    group's (the system group's)."""
    values = helm_values(_dra_release(template))
    rendered = render_vendored(
        helm, DRA_CHART, "nvidia-dra-driver-gpu", DRA_NAMESPACE, values, tmp_path
    )
    (daemonset,) = [d for d in manifests(rendered) if d["kind"] == "DaemonSet"]
    assert daemonset["metadata"]["name"] == "nvidia-dra-driver-gpu-kubelet-plugin"
    pod = daemonset["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["compute-domains", "gpus"]
    admitted = {
        node_of(group["Properties"])[0].get(POOL_LABEL): pod_fits_node(
            pod, *node_of(group["Properties"])
        )
        for group in _of_type(template, "AWS::EKS::Nodegroup").values()
    }
    assert admitted == {"gb200": True, None: False}


def test_the_node_template_advertises_the_four_efa_interfaces(template):
    """What the EFA device plugin registers with one EFA-only interface per card group (EKS
    UG "Use P6e-GB200 UltraServers with Amazon EKS": 4 allocatable vpc.amazonaws.com/efa)."""
    (tags,) = [
        {render(t["Key"]): t["Value"] for t in r["Properties"]["Tags"]}
        for k, r in _of_type(template, "Custom::GpuPoolAsgTags").items()
        if k.startswith("GpuPoolGb200")
    ]
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "4"


# EKS's shape (tests/support/settings.ULTRASERVER, every choice the default): the GPU Operator's
# device plugin for the GPUs, the DRA driver for ComputeDomains only (EKS UG "Use P6e-GB200
# UltraServers with Amazon EKS", gpu-operator-values.yaml and dra-values.yaml).
EKS_SHAPE_DRA_VALUES = expected_driver_values(
    ["gb200"],
    [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    compute_domains=True,
    gpus=False,
)


def _release(template, chart):
    (release,) = [
        r
        for r in _of_type(template, "Custom::AWSCDK-EKS-HelmChart").values()
        if r["Properties"]["Chart"] == chart
    ]
    return release


def test_eks_shape_runs_the_dra_driver_for_compute_domains_only(ultraserver_template):
    template = ultraserver_template.to_json()
    assert helm_values(_release(template, "dra-driver-nvidia-gpu")) == EKS_SHAPE_DRA_VALUES


def test_eks_shape_rendered_kubelet_plugin_publishes_no_gpu(
    ultraserver_template, helm, tmp_path
):
    """The pinned chart, rendered with the release's values: it passes the chart's validation
    without gpuResourcesEnabledOverride, its kubelet plugin runs the ComputeDomain plugin alone
    (no `gpus` container, no gpu.nvidia.com DeviceClass: nothing advertises GPUs beside the
    device plugin), on the UltraServer nodes only, and the controller runs."""
    template = ultraserver_template.to_json()
    values = helm_values(_release(template, "dra-driver-nvidia-gpu"))
    rendered = render_vendored(
        helm, DRA_CHART, "nvidia-dra-driver-gpu", DRA_NAMESPACE, values, tmp_path
    )
    assert rendered.returncode == 0, rendered.stderr
    docs = manifests(rendered)
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["compute-domains"]
    assert sorted(d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass") == [
        "compute-domain-daemon.nvidia.com",
        "compute-domain-default-channel.nvidia.com",
    ]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"] == [
        "nvidia-dra-driver-gpu-controller"
    ]
    admitted = {
        node_of(group["Properties"])[0].get(POOL_LABEL): pod_fits_node(
            pod, *node_of(group["Properties"])
        )
        for group in _of_type(template, "AWS::EKS::Nodegroup").values()
    }
    assert admitted == {"gb200": True, None: False}


def test_eks_shape_gpu_operator_runs_gfd_and_the_device_plugin(ultraserver_template):
    """The operator with EKS's values: its device plugin, NFD and GPU Feature Discovery (the
    nvidia.com/gpu.clique label), no driver, toolkit or MIG manager; its device plugin reaches
    the UltraServer nodes (they do not opt out of its operands)."""
    template = ultraserver_template.to_json()
    values = helm_values(_release(template, "gpu-operator"))
    keys = ("devicePlugin", "nfd", "gfd", "driver", "toolkit", "migManager")
    assert {k: values[k] for k in keys} == {
        "devicePlugin": {"enabled": True},
        "nfd": {"enabled": True},
        "gfd": {"enabled": True},
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "migManager": {"enabled": False},
    }
    (group,) = [
        r["Properties"]
        for k, r in _of_type(template, "AWS::EKS::Nodegroup").items()
        if k.startswith("GpuPoolGb200")
    ]
    labels, _ = node_of(group)
    assert "nvidia.com/gpu.deploy.operands" not in labels


def test_eks_shape_node_template_advertises_the_device_plugins_gpus(ultraserver_template):
    """A ComputeDomain-only pool's GPUs are nvidia.com/gpu: Cluster Autoscaler's template says
    4 (the type's GPUs, not DRA's 0), and the node carries CA's accelerator label; CA runs
    without its DRA flag."""
    template = ultraserver_template.to_json()
    (tags,) = [
        {render(t["Key"]): t["Value"] for t in r["Properties"]["Tags"]}
        for k, r in _of_type(template, "Custom::GpuPoolAsgTags").items()
        if k.startswith("GpuPoolGb200")
    ]
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "4"
    assert tags["k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator"]
    autoscaler = helm_values(_release(template, "cluster-autoscaler"))
    assert "enable-dynamic-resource-allocation" not in autoscaler.get("extraArgs", {})


def test_eks_shape_stripes_the_instance_store_through_the_launch_templates_node_config(
    ultraserver_template,
):
    """The guide's RAID0 for the type's 3 x 7.5 TB: the pool's launch template carries one
    MIME part of type application/node.eks.aws whose NodeConfig stripes it (the API server
    judges it by nodeadm's CRD in tests/e2e/test_custom_resources.py), and CA's template counts
    the array as the node's ephemeral storage."""
    import email

    import yaml

    template = ultraserver_template.to_json()
    (data,) = [
        r["Properties"]["LaunchTemplateData"]
        for k, r in _of_type(template, "AWS::EC2::LaunchTemplate").items()
        if k.startswith("GpuPoolGb200")
    ]
    message = email.message_from_string(data["UserData"]["Fn::Base64"])
    (part,) = message.get_payload()
    assert part.get_content_type() == "application/node.eks.aws"
    config = yaml.safe_load(part.get_payload())
    assert config["spec"] == {"instance": {"localStorage": {"strategy": "RAID0"}}}
    (tags,) = [
        {render(t["Key"]): t["Value"] for t in r["Properties"]["Tags"]}
        for k, r in _of_type(template, "Custom::GpuPoolAsgTags").items()
        if k.startswith("GpuPoolGb200")
    ]
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"] == "22500G"
