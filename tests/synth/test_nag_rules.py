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

# case -> (launch template data, the GpuPool rules it breaks)
CASES = {
    "compliant": ({"blockDeviceMappings": [ENCRYPTED], "metadataOptions": IMDSV2}, []),
    # Only the second volume is unencrypted: a rule reading the first mapping misses it.
    "second-volume-unencrypted": (
        {
            "blockDeviceMappings": [
                ENCRYPTED,
                {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": 100}},
            ],
            "metadataOptions": IMDSV2,
        },
        ["GpuPool-LaunchTemplateEncryptedVolumes"],
    ),
    # No metadata options at all: EC2's default accepts IMDSv1 (EC2 user guide, "Configure the
    # instance metadata options for new instances").
    "no-metadata-options": ({"blockDeviceMappings": [ENCRYPTED]}, ["GpuPool-LaunchTemplateIMDSv2"]),
    "imdsv1": (
        {"blockDeviceMappings": [ENCRYPTED], "metadataOptions": {"httpTokens": "optional"}},
        ["GpuPool-LaunchTemplateIMDSv2"],
    ),
    # An instance-store mapping has no EBS volume to encrypt.
    "instance-store": (
        {
            "blockDeviceMappings": [
                ENCRYPTED,
                {"deviceName": "/dev/sdb", "virtualName": "ephemeral0"},
            ],
            "metadataOptions": IMDSV2,
        },
        [],
    ),
}


@pytest.fixture(scope="module")
def findings_by_case(tmp_path_factory) -> dict[str, list[str]]:
    """One app with a launch template per case, validated as the app does it (a validation
    plugin: synth fails on a violation and writes validation-report.json): case -> the GpuPool
    rule ids reported on its launch template."""
    out = tmp_path_factory.mktemp("nag")
    app = cdk.App(outdir=str(out))
    stack = cdk.Stack(app, "Nag")
    for case, (data, _) in CASES.items():
        ec2.CfnLaunchTemplate(stack, case, launch_template_data=data)
    cdk.Validations.of(app).add_plugins(GpuPoolNagPack(app))
    try:
        app.synth()
    except RuntimeError:
        pass  # the report says why
    # A plugin with nothing to say writes no report.
    reports = json.loads((out / "validation-report.json").read_text())["pluginReports"]
    found: dict[str, list[str]] = {case: [] for case in CASES}
    for violation in (v for r in reports for v in r.get("violations", [])):
        for construct in violation["violatingConstructs"]:
            # Nag/<case>: the launch template's path names its case.
            found[construct["constructPath"].split("/")[1]].append(violation["ruleName"])
    return {case: sorted(rules) for case, rules in found.items()}


@pytest.mark.parametrize("case", CASES)
def test_launch_template_rules(findings_by_case, case):
    assert findings_by_case[case] == CASES[case][1]
