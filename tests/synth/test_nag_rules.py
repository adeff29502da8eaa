"""The GpuPool nag pack's own rules, each on a resource that breaks it in one way and on one
that keeps it: the pack must flag what the app never builds (the app's templates always pass)."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from gpu_pool.cdk.nag.rules import GpuPoolNagPack

ENCRYPTED = {"deviceName": "/dev/xvda", "ebs": {"volumeSize": 200, "encrypted": True}}
IMDSV2 = {"httpTokens": "required"}


def _findings(tmp_path, launch_template_data: dict) -> list[str]:
    """The GpuPool rule ids the pack reports on one launch template, as the app runs it (a
    validation plugin: synth fails on a violation and writes validation-report.json)."""
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Nag")
    ec2.CfnLaunchTemplate(stack, "LaunchTemplate", launch_template_data=launch_template_data)
    cdk.Validations.of(app).add_plugins(GpuPoolNagPack(app))
    try:
        app.synth()
    except RuntimeError:
        pass  # the report says why
    # A plugin with nothing to say writes no report.
    reports = json.loads((tmp_path / "validation-report.json").read_text())["pluginReports"]
    return sorted(v["ruleName"] for r in reports for v in r.get("violations", []))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"blockDeviceMappings": [ENCRYPTED], "metadataOptions": IMDSV2}, []),
        # Only the second volume is unencrypted: a rule reading the first mapping misses it.
        (
            {
                "blockDeviceMappings": [
                    ENCRYPTED,
                    {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": 100}},
                ],
                "metadataOptions": IMDSV2,
            },
            ["GpuPool-LaunchTemplateEncryptedVolumes"],
        ),
        # No metadata options at all: EC2's default accepts IMDSv1 (EC2 user guide, "Configure
        # the instance metadata options for new instances").
        ({"blockDeviceMappings": [ENCRYPTED]}, ["GpuPool-LaunchTemplateIMDSv2"]),
        (
            {"blockDeviceMappings": [ENCRYPTED], "metadataOptions": {"httpTokens": "optional"}},
            ["GpuPool-LaunchTemplateIMDSv2"],
        ),
        # An instance-store mapping has no EBS volume to encrypt.
        (
            {
                "blockDeviceMappings": [
                    ENCRYPTED,
                    {"deviceName": "/dev/sdb", "virtualName": "ephemeral0"},
                ],
                "metadataOptions": IMDSV2,
            },
            [],
        ),
    ],
    ids=[
        "compliant",
        "second-volume-unencrypted",
        "no-metadata-options",
        "imdsv1",
        "instance-store",
    ],
)
def test_launch_template_rules(tmp_path, data, expected):
    assert _findings(tmp_path, data) == expected
