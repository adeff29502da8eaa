"""What the app exposes and logs, and what node credentials a pod can reach."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks

from gpu_pool.cdk.nag.rules import GpuPoolNagPack
from tests.support.cfn import only, render, resources, synth, unvalidated_app
from tests.support.paths import ROOT
from tests.support.settings import BOTTLEROCKET, EXISTING


def _vpc_config(template):
    return only(resources(template, "AWS::EKS::Cluster"))[1]["Properties"]["ResourcesVpcConfig"]


@pytest.mark.parametrize(
    ("cluster", "public", "private", "cidrs"),
    [
        ({}, True, True, ["0.0.0.0/0"]),
        ({"public_access_cidrs": ["203.0.113.0/24"]}, True, True, ["203.0.113.0/24"]),
        ({"endpoint_access": "public"}, True, False, None),
        ({"endpoint_access": "private"}, False, True, None),
    ],
    ids=["default", "narrowed", "public-only", "private"],
)
def test_endpoint_access_per_setting(default_template, cluster, public, private, cidrs):
    template = synth({"cluster": cluster}) if cluster else default_template
    config = _vpc_config(template)
    assert config["EndpointPublicAccess"] is public
    assert config["EndpointPrivateAccess"] is private
    assert config.get("PublicAccessCidrs") == cidrs


def test_audit_and_authenticator_logs_by_default_kept_for_the_retention(default_template):
    (_, cluster) = only(resources(default_template, "AWS::EKS::Cluster"))
    assert cluster["Properties"]["Logging"] == {
        "ClusterLogging": {"EnabledTypes": [{"Type": "audit"}, {"Type": "authenticator"}]}
    }
    groups = [
        g["Properties"]
        for g in resources(default_template, "AWS::Logs::LogGroup").values()
        if g["Properties"].get("LogGroupName") == "/aws/eks/gpu-pool/cluster"
    ]
    assert groups == [{"LogGroupName": "/aws/eks/gpu-pool/cluster", "RetentionInDays": 90}]


def test_logging_types_and_retention_follow_the_settings():
    template = synth({"cluster": {"logging": {"types": ["api", "audit"], "retention_days": 365}}})
    (_, cluster) = only(resources(template, "AWS::EKS::Cluster"))
    assert cluster["Properties"]["Logging"]["ClusterLogging"]["EnabledTypes"] == [
        {"Type": "api"},
        {"Type": "audit"},
    ]


def _launch_template_of(template, nodegroup):
    reference = nodegroup["Properties"]["LaunchTemplate"]
    logical_id = reference["Id"]["Ref"]
    assert render(reference["Version"]) == f"<GetAtt:{logical_id}.LatestVersionNumber>"
    return resources(template, "AWS::EC2::LaunchTemplate")[logical_id]["Properties"][
        "LaunchTemplateData"
    ]


@pytest.mark.parametrize(
    ("settings", "device", "gpu_size"),
    [
        ({}, "/dev/xvda", 200),
        (BOTTLEROCKET, "/dev/xvdb", 200),
        ({"pool": {"disk_size_gib": 500}}, "/dev/xvda", 500),
    ],
    ids=["al2023", "bottlerocket-data-volume", "configured-size"],
)
def test_every_node_group_launches_encrypted_gp3_with_imdsv2_hop_1(
    default_template, settings, device, gpu_size
):
    template = synth(settings) if settings else default_template
    nodegroups = resources(template, "AWS::EKS::Nodegroup").values()
    assert len(nodegroups) == 2  # the GPU group and the system group
    for nodegroup in nodegroups:
        gpu = "gpu-pool.io/pool" in nodegroup["Properties"]["Labels"]
        data = _launch_template_of(template, nodegroup)
        assert data["BlockDeviceMappings"] == [
            {
                "DeviceName": device if gpu else "/dev/xvda",
                "Ebs": {
                    "DeleteOnTermination": True,
                    "Encrypted": True,
                    "VolumeSize": gpu_size if gpu else 20,
                    "VolumeType": "gp3",
                },
            }
        ]
        assert data["MetadataOptions"] == {
            "HttpEndpoint": "enabled",
            "HttpPutResponseHopLimit": 1,
            "HttpTokens": "required",
        }
        assert "DiskSize" not in nodegroup["Properties"]  # CloudFormation refuses both


def test_a_customer_key_and_a_higher_hop_limit_are_settings():
    key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    template = synth({"pool": {"volume_kms_key_arn": key, "imds_hop_limit": 2}})
    datas = [
        d["Properties"]["LaunchTemplateData"]
        for d in resources(template, "AWS::EC2::LaunchTemplate").values()
    ]
    gpu = [d for d in datas if d["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 200]
    assert gpu[0]["BlockDeviceMappings"][0]["Ebs"]["KmsKeyId"] == key
    assert gpu[0]["MetadataOptions"]["HttpPutResponseHopLimit"] == 2


def test_an_existing_cluster_is_left_as_it_is_and_its_node_groups_still_get_the_template():
    template = synth(EXISTING)
    assert not resources(template, "AWS::EKS::Cluster")
    assert not [
        g
        for g in resources(template, "AWS::Logs::LogGroup").values()
        if str(g["Properties"].get("LogGroupName", "")).startswith("/aws/eks/")
    ]
    (_, nodegroup) = only(resources(template, "AWS::EKS::Nodegroup"))
    assert _launch_template_of(template, nodegroup)["MetadataOptions"]["HttpTokens"] == "required"


# The project rules, each on a stack that breaks it and one that does not.


def _findings(build):
    app = unvalidated_app()
    stack = cdk.Stack(app, "Rules")
    build(stack)
    report = GpuPoolNagPack().validate_scope(stack)
    return sorted(v.rule_name for v in report.violations)


def _cluster(stack, *, public=True, cidrs=None, logs=("audit",)):
    eks.CfnCluster(
        stack,
        "Cluster",
        role_arn="arn:aws:iam::123456789012:role/c",
        resources_vpc_config=eks.CfnCluster.ResourcesVpcConfigProperty(
            subnet_ids=["subnet-1"], endpoint_public_access=public, public_access_cidrs=cidrs
        ),
        logging=eks.CfnCluster.LoggingProperty(
            cluster_logging=eks.CfnCluster.ClusterLoggingProperty(
                enabled_types=[eks.CfnCluster.LoggingTypeConfigProperty(type=t) for t in logs]
            )
        ),
    )


def _launch_template(stack, *, encrypted=True, tokens="required"):
    return ec2.CfnLaunchTemplate(
        stack,
        "Template",
        launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            block_device_mappings=[
                ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                    device_name="/dev/xvda",
                    ebs=ec2.CfnLaunchTemplate.EbsProperty(volume_size=200, encrypted=encrypted),
                )
            ],
            metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(http_tokens=tokens),
        ),
    )


def _nodegroup(stack, template=None):
    eks.CfnNodegroup(
        stack,
        "Nodes",
        cluster_name="c",
        node_role="arn:aws:iam::123456789012:role/n",
        subnets=["subnet-1"],
        launch_template=eks.CfnNodegroup.LaunchTemplateSpecificationProperty(id=template.ref)
        if template
        else None,
    )


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda s: _cluster(s, cidrs=["203.0.113.0/24"]), []),
        (lambda s: _cluster(s, public=False), []),
        (lambda s: _cluster(s, cidrs=None), ["GpuPool-EKSPublicEndpoint"]),
        (lambda s: _cluster(s, cidrs=["10.0.0.0/8", "0.0.0.0/0"]), ["GpuPool-EKSPublicEndpoint"]),
        (lambda s: _cluster(s, public=False, logs=("api",)), ["GpuPool-EKSAuditLogging"]),
        (lambda s: _nodegroup(s, _launch_template(s)), []),
        (lambda s: _nodegroup(s), ["GpuPool-NodegroupLaunchTemplate"]),
        (
            lambda s: _launch_template(s, encrypted=False),
            ["GpuPool-LaunchTemplateEncryptedVolumes"],
        ),
        (lambda s: _launch_template(s, tokens="optional"), ["GpuPool-LaunchTemplateIMDSv2"]),
    ],
    ids=[
        "narrowed-endpoint",
        "private-endpoint",
        "endpoint-open-by-default",
        "endpoint-open-among-others",
        "no-audit-log",
        "nodegroup-with-template",
        "nodegroup-without-template",
        "unencrypted-volume",
        "imdsv1-allowed",
    ],
)
def test_each_project_rule_flags_what_breaks_it_and_passes_what_does_not(build, expected):
    assert _findings(build) == expected


def test_the_default_apps_report_shows_the_endpoint_decision(tmp_path):
    import json
    import subprocess
    import sys

    root = ROOT
    report = tmp_path / "validation-report.json"
    from gpu_pool.cdk.nag.acknowledge import apply_aws_solutions
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import load_settings

    app = cdk.App(outdir=str(tmp_path))
    context = json.loads((root / "cdk.json").read_text())["context"]["gpu-pool"]
    GpuPoolStack(app, "GpuPool", settings=load_settings(context, None))
    apply_aws_solutions(app)
    app.synth()
    printed = subprocess.run(
        [sys.executable, str(root / "tools" / "nag_report.py"), str(report)],
        capture_output=True,
        text=True,
    )
    assert printed.returncode == 0
    lines = printed.stdout.splitlines()
    assert "cdk-nag GpuPool: success, 0 open, 1 acknowledged" in lines
    assert (
        "  ack  GpuPool-EKSPublicEndpoint: cluster.public_access_cidrs is 0.0.0.0/0 (the default, "
        "so kubectl and gpu-pool verify work from anywhere; requests still need IAM credentials "
        "mapped to the cluster): set your own ranges, or endpoint_access: private"
    ) in lines
