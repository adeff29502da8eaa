"""What a synthesized stack puts in a cluster, with its tokens as a deploy would resolve them.

The KubernetesManifest resources (Custom::AWSCDK-EKS-KubernetesResource) and Helm releases
(Custom::AWSCDK-EKS-HelmChart) of a template, in template order; references to the stack's
other resources become values of the shape CloudFormation gives them (an IAM role's Arn, the
cluster's endpoint URL, a name), so the API server judges the objects a deploy would send.
Charts come from where the test suite holds the pinned versions: the vendored charts
(tests/fixtures/charts) and Karpenter's, from its Go module at the pinned release.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from tests.support.paths import FIXTURES

ACCOUNT = "123456789012"
REGION = "us-east-1"
PSEUDO = {
    "AWS::AccountId": ACCOUNT,
    "AWS::Region": REGION,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "GpuPool",
}
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
HELM = "Custom::AWSCDK-EKS-HelmChart"


def _name(logical_id: str) -> str:
    return re.sub(r"[^a-z0-9-]", "", logical_id.lower())[:63]


def _attribute(logical_id: str, attribute: str) -> str:
    if attribute == "Arn":
        return f"arn:aws:iam::{ACCOUNT}:role/{_name(logical_id)}"
    if attribute == "Endpoint":
        return f"https://0123456789ABCDEF0123456789ABCDEF.gr7.{REGION}.eks.amazonaws.com"
    return _name(f"{logical_id}-{attribute}")


def deployed(value: Any) -> Any:
    """`value` with its intrinsic functions resolved to deploy-shaped strings."""
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return PSEUDO.get(argument, _name(argument))
        if function == "Fn::GetAtt":
            return (
                _attribute(*argument)
                if isinstance(argument, list)
                else _attribute(*argument.split(".", 1))
            )
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(deployed(p)) for p in parts)
        if function == "Fn::Select":
            index, items = argument
            return deployed(items)[int(index)]
        if function == "Fn::Split":
            separator, text = argument
            return str(deployed(text)).split(separator)
    if isinstance(value, dict):
        return {k: deployed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deployed(v) for v in value]
    return value


@dataclass(frozen=True)
class Manifest:
    logical_id: str
    objects: list[dict[str, Any]]
    overwrite: bool


@dataclass(frozen=True)
class Release:
    logical_id: str
    chart: str
    version: str
    release: str
    namespace: str
    values: dict[str, Any]
    create_namespace: bool


def manifests(template: Template) -> list[Manifest]:
    return [
        Manifest(
            logical_id,
            json.loads(deployed(resource["Properties"]["Manifest"])),
            str(resource["Properties"].get("Overwrite", "false")).lower() == "true",
        )
        for logical_id, resource in template.find_resources(MANIFEST).items()
    ]


def releases(template: Template) -> list[Release]:
    found = []
    for logical_id, resource in template.find_resources(HELM).items():
        properties = deployed(resource["Properties"])
        found.append(
            Release(
                logical_id,
                properties["Chart"],
                properties.get("Version", ""),
                properties["Release"],
                properties.get("Namespace", "default"),
                json.loads(properties.get("Values", "{}")),
                bool(properties.get("CreateNamespace", True)),
            )
        )
    return found


VENDORED = FIXTURES / "charts"
VENDORED_CHARTS = {
    "nvidia-device-plugin": VENDORED / "nvidia-device-plugin-0.20.0",
    "gpu-operator": VENDORED / "gpu-operator-v26.3.1",
    "dra-driver-nvidia-gpu": VENDORED / "dra-driver-nvidia-gpu-0.4.1",
    "aws-dranet": VENDORED / "aws-dranet-1.0.0",
}


def chart_directory(release: Release, karpenter_module: Path | None) -> Path | None:
    """Where the pinned chart of `release` is held here, or None (not vendored: the
    cluster-autoscaler chart, and dcgm-exporter's)."""
    if release.chart in ("karpenter", "karpenter-crd") and karpenter_module is not None:
        return karpenter_module / "charts" / release.chart
    return VENDORED_CHARTS.get(release.chart)
