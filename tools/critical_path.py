"""Estimated deploy critical path of a synthesized template, against the bare reference app.

Offline: reads the templates (or synthesizes the default app and tools/reference_app.py, as
`./dev bench` does, with no AWS access), builds each template's dependency graph (DependsOn,
Ref, Fn::GetAtt, Fn::Sub), gives each resource a typical create time by type (CREATE_SECONDS,
each figure with its basis) and prints the longest chain of creates: what CloudFormation must
do one after another, so a lower bound of the deploy's wall time. It exits 1 if the app's path
is over TARGET times the reference's.

    python tools/critical_path.py                        # synthesizes both (about 10 s)
    python tools/critical_path.py --app A.template.json --reference B.template.json

The figures are typical, not this account's: the ratio, not the minutes, is what the target
judges. No timing of this machine enters the estimate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.05

_CLOUDFORMATION_UG = "CloudFormation UG, resource reference"
# A Lambda-backed custom resource: CloudFormation invokes the function, which answers in
# seconds for an API call or two (the node group handler's tag and scaling resources, the
# Auto Mode guard, the VPC's default-SG restriction).
_CUSTOM = (15, "estimate: one Lambda invocation of a few API calls, cold start included")
_IAM = (10, "estimate: IAM is eventually consistent; CloudFormation waits for propagation")
_QUICK = (5, "estimate: one API call that completes synchronously")

# Typical create seconds per resource type, and the basis of each figure. Estimates are marked
# so: no deploy was timed for this table (no AWS account where it was written).
CREATE_SECONDS: dict[str, tuple[int, str]] = {
    "AWS::EKS::Cluster": (
        600,
        f"{_CLOUDFORMATION_UG} AWS::EKS::Cluster: 'Cluster creation typically takes between "
        "10 and 15 minutes' (the low end, which makes the ratio stricter)",
    ),
    "AWS::EKS::Nodegroup": (
        120,
        "estimate: EKS creates the launch template and ASG and waits for desired nodes; the "
        "pools start at desired 0, so no instance launch is waited for",
    ),
    "AWS::EKS::Addon": (60, "estimate: EKS installs the add-on and waits for it to be active"),
    "AWS::EKS::AccessEntry": _QUICK,
    "AWS::EKS::PodIdentityAssociation": _QUICK,
    "Custom::AWSCDK-EKS-HelmChart": (
        60,
        "estimate: the kubectl provider's Lambda runs `helm upgrade --install` without --wait "
        "(aws-cdk-lib HelmChart wait defaults to false): repository fetch and apply",
    ),
    "Custom::AWSCDK-EKS-KubernetesResource": (
        20,
        "estimate: the kubectl provider's Lambda runs one `kubectl apply`",
    ),
    "AWS::Lambda::Function": (
        15,
        "estimate: CreateFunction, then CloudFormation waits for the function to be Active",
    ),
    "AWS::Lambda::LayerVersion": (10, "estimate: PublishLayerVersion of an uploaded asset"),
    "AWS::IAM::Role": _IAM,
    "AWS::IAM::Policy": _IAM,
    "AWS::IAM::InstanceProfile": (
        120,
        "estimate: CloudFormation waits about two minutes after creating an instance profile",
    ),
    "AWS::SSM::Parameter": _QUICK,
    "AWS::Logs::LogGroup": _QUICK,
    "AWS::EC2::VPC": (15, "estimate: CreateVpc, then waits for state available"),
    "AWS::EC2::Subnet": (10, "estimate: CreateSubnet, then waits for state available"),
    "AWS::EC2::NatGateway": (
        120,
        "estimate: EC2 UG, NAT gateways: a new gateway is `pending` before `available`, "
        "typically a minute or two",
    ),
    "AWS::EC2::InternetGateway": _QUICK,
    "AWS::EC2::VPCGatewayAttachment": (15, "estimate: AttachInternetGateway and its wait"),
    "AWS::EC2::RouteTable": _QUICK,
    "AWS::EC2::Route": _QUICK,
    "AWS::EC2::SubnetRouteTableAssociation": _QUICK,
    "AWS::EC2::EIP": _QUICK,
    "AWS::EC2::SecurityGroup": _QUICK,
    "AWS::EC2::SecurityGroupIngress": _QUICK,
    "AWS::EC2::SecurityGroupEgress": _QUICK,
    "AWS::EC2::LaunchTemplate": _QUICK,
    "AWS::EC2::PlacementGroup": _QUICK,
    "AWS::EC2::FlowLog": _QUICK,
    "AWS::SQS::Queue": (60, "estimate: CloudFormation waits about a minute for a new queue"),
    "AWS::SQS::QueuePolicy": _QUICK,
    "AWS::Events::Rule": _QUICK,
}


def create_seconds(resource_type: str) -> int:
    """The table's figure for a type; any other custom resource counts as one Lambda call,
    anything else as a quick API call."""
    if resource_type in CREATE_SECONDS:
        return CREATE_SECONDS[resource_type][0]
    return (_CUSTOM if resource_type.startswith("Custom::") else _QUICK)[0]


def references(value: Any) -> Iterator[str]:
    """The logical ids `value` refers to: Ref, Fn::GetAtt (list or `Id.Attr`) and the
    `${Id}` / `${Id.Attr}` of Fn::Sub (not `${AWS::...}`, `${!literal}` or its own
    variables). Parameters and pseudo parameters are filtered by the caller."""
    if isinstance(value, list):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                yield inner
            elif key == "Fn::GetAtt":
                yield (inner[0] if isinstance(inner, list) else str(inner).split(".")[0])
            elif key == "Fn::Sub":
                text, variables = (inner, {}) if isinstance(inner, str) else inner
                yield from _sub_references(text, variables)
                yield from references(variables)
            else:
                yield from references(inner)


def _sub_references(text: str, variables: Mapping[str, Any]) -> Iterator[str]:
    for part in text.split("${")[1:]:
        name, closed, _ = part.partition("}")
        if closed and not name.startswith("!"):
            logical_id = name.split(".")[0]
            if logical_id not in variables and not logical_id.startswith("AWS::"):
                yield logical_id


def dependency_graph(template: Mapping[str, Any]) -> dict[str, set[str]]:
    """Each resource's logical id -> the resources it waits for."""
    resources = template.get("Resources", {})
    graph = {}
    for logical_id, resource in resources.items():
        depends_on = resource.get("DependsOn", [])
        found = {depends_on} if isinstance(depends_on, str) else set(depends_on)
        found |= set(references(resource.get("Properties", {})))
        graph[logical_id] = {d for d in found if d in resources and d != logical_id}
    return graph


def critical_path(template: Mapping[str, Any]) -> tuple[int, list[str]]:
    """The longest chain of creates (seconds, logical ids from first to last)."""
    resources = template.get("Resources", {})
    graph = dependency_graph(template)

    @cache
    def finish(logical_id: str) -> tuple[int, tuple[str, ...]]:
        before = max((finish(d) for d in sorted(graph[logical_id])), default=(0, ()))
        own = create_seconds(resources[logical_id]["Type"])
        return before[0] + own, (*before[1], logical_id)

    if not resources:
        return 0, []
    seconds, path = max(finish(logical_id) for logical_id in sorted(resources))
    return seconds, list(path)


def describe(name: str, template: Mapping[str, Any]) -> tuple[int, list[str]]:
    seconds, path = critical_path(template)
    resources = template["Resources"]
    print(f"{name}: {seconds} s ({seconds / 60:.1f} min) over {len(path)} creates")
    for logical_id in path:
        kind = resources[logical_id]["Type"]
        print(f"  {create_seconds(kind):>4} s  {kind:40} {logical_id}")
    return seconds, path


def _synthesized(script: str, out: Path) -> dict[str, Any]:
    """The one stack template of `python <script>` synthesized into `out` with cdk.json's
    context, as the CDK CLI would run it."""
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    env = {**os.environ, "CDK_OUTDIR": str(out), "CDK_CONTEXT_JSON": json.dumps(context)}
    subprocess.run([sys.executable, script], cwd=ROOT, env=env, check=True, capture_output=True)
    (template,) = out.glob("*.template.json")
    return dict(json.loads(template.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", type=Path, help="the app's template (default: synthesize)")
    parser.add_argument("--reference", type=Path, help="the reference's (default: synthesize)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="critical-path-") as scratch:
        app = (
            json.loads(args.app.read_text())
            if args.app
            else _synthesized("app.py", Path(scratch) / "app")
        )
        reference = (
            json.loads(args.reference.read_text())
            if args.reference
            else _synthesized("tools/reference_app.py", Path(scratch) / "reference")
        )
    app_seconds, _ = describe("app", app)
    reference_seconds, _ = describe("bare reference", reference)
    ratio = app_seconds / reference_seconds
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(f"\napp / bare reference: {ratio:.3f}x (target <= {TARGET:.2f}x): {verdict}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
