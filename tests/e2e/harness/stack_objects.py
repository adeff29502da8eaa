"""What a synthesized stack puts in a cluster, with its tokens as a deploy would resolve them.

The KubernetesManifest resources (Custom::AWSCDK-EKS-KubernetesResource) and Helm releases
(Custom::AWSCDK-EKS-HelmChart) of a template, in template order; references to the stack's
other resources become values of the shape CloudFormation gives them (an IAM role's Arn, the
cluster's endpoint URL, a name), so the API server judges the objects a deploy would send.
Charts come from where the test suite holds the pinned versions: the vendored charts
(tests/fixtures/charts) and Karpenter's, from its Go module at the pinned release.
"""

from __future__ import annotations

import hashlib
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


def _hex(logical_id: str) -> str:
    return hashlib.sha256(logical_id.encode()).hexdigest()[:17]


# What CloudFormation's Ref returns for the resource types gpu-pool's objects refer to (each
# type's "Return values" in the CloudFormation user guide); other types give their name.
_REF_SHAPES = {
    "AWS::EC2::Subnet": "subnet-{hex}",
    "AWS::EC2::SecurityGroup": "sg-{hex}",
    "AWS::EC2::LaunchTemplate": "lt-{hex}",
    "AWS::EC2::PlacementGroup": "{name}",
    "AWS::SQS::Queue": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{{name}}",
    "AWS::KMS::Key": "{hex}",
}


def _attribute(logical_id: str, attribute: str) -> str:
    if attribute == "Arn" or attribute.endswith("Arn"):
        return f"arn:aws:iam::{ACCOUNT}:role/{_name(logical_id)}"
    if attribute == "Endpoint":
        return f"https://0123456789ABCDEF0123456789ABCDEF.gr7.{REGION}.eks.amazonaws.com"
    if attribute.endswith("SecurityGroupId") or attribute == "GroupId":
        return f"sg-{_hex(logical_id)}"
    if attribute == "SubnetId":
        return f"subnet-{_hex(logical_id)}"
    return _name(f"{logical_id}-{attribute}")


def deployed(
    value: Any,
    types: dict[str, str] | None = None,
    resolved: dict[tuple[str, str], str] | None = None,
) -> Any:
    """`value` with its intrinsic functions resolved to deploy-shaped strings (`types`: the
    template's resource types by logical id, for the shape of a Ref; `resolved`: what a test's
    world knows, (logical id, attribute or "Ref") -> value, such as the ASG names or the subnet
    ids moto gave)."""
    types, resolved = types or {}, resolved or {}
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            if argument in PSEUDO:
                return PSEUDO[argument]
            if (argument, "Ref") in resolved:
                return resolved[(argument, "Ref")]
            shape = _REF_SHAPES.get(types.get(argument, ""), "{name}")
            return shape.format(hex=_hex(argument), name=_name(argument))
        if function == "Fn::GetAtt":
            logical_id, attribute = (
                argument if isinstance(argument, list) else argument.split(".", 1)
            )
            return resolved.get((logical_id, attribute)) or _attribute(logical_id, attribute)
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(deployed(p, types, resolved)) for p in parts)
        if function == "Fn::Select":
            index, items = argument
            return deployed(items, types, resolved)[int(index)]
        if function == "Fn::Split":
            separator, text = argument
            return str(deployed(text, types, resolved)).split(separator)
    if isinstance(value, dict):
        return {k: deployed(v, types, resolved) for k, v in value.items()}
    if isinstance(value, list):
        return [deployed(v, types, resolved) for v in value]
    return value


def _types(template: Template) -> dict[str, str]:
    return {k: r["Type"] for k, r in template.to_json().get("Resources", {}).items()}


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


def manifests(
    template: Template, resolved: dict[tuple[str, str], str] | None = None
) -> list[Manifest]:
    types = _types(template)
    return [
        Manifest(
            logical_id,
            json.loads(deployed(resource["Properties"]["Manifest"], types, resolved)),
            str(resource["Properties"].get("Overwrite", "false")).lower() == "true",
        )
        for logical_id, resource in template.find_resources(MANIFEST).items()
    ]


def releases(template: Template) -> list[Release]:
    found, types = [], _types(template)
    for logical_id, resource in template.find_resources(HELM).items():
        properties = deployed(resource["Properties"], types)
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


def chart_container(helm: Path, chart: Path, release: Release, work: Path) -> dict[str, Any]:
    """The only container of the only Deployment the chart renders for the release's values
    (helm template with the real helm, in kube-system: where the stack installs both
    autoscalers), as the controller that chart runs would be started."""
    from tests.support.helm import helm_template

    rendered = helm_template(helm, release.release, str(chart), release.values, work)
    (deployment,) = [d for d in rendered if d.get("kind") == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)
