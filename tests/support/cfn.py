"""Reading synthesized CloudFormation the way the deployed resources will see it."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from gpu_pool.cdk.nodegroups.asg_tags import RESOURCE_TYPE
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import AppSettings
from tests.support.run_cache import key_of, shared_json, sharing

# aws-cdk-lib's cx-api DISABLE_ASSET_STAGING_CONTEXT, which `cdk synth --no-staging` sets: assets
# stay where they are, referenced by absolute path, instead of being copied into the assembly.
NO_STAGING = "aws:cdk:disable-asset-staging"


def unvalidated_app(*, context: dict[str, Any] | None = None, **props: Any) -> cdk.App:
    """An App for tests that read templates, not validation reports: its synth skips
    aws-cdk-lib's built-in CloudFormation validation (AppProps builtinCloudFormationValidation;
    without cdk.json's validateAgainstDefaultRules its findings are only warnings in
    validation-report.json) and the construct stack traces no test reads (stackTraces). Over a
    quarter of each synth's time; the templates are the same. Tests of validation reports (the
    nag tests, the pipeline example, the default app's report, the fleet's app.py runs) build
    validated Apps, as the app's own `cdk synth` is.

    Nor does it stage assets (NO_STAGING): each synth copied the 30 MB kubectl layer zip and
    the handlers into its assembly, a sixth of the synth, for tests that read no asset, and
    left it in a temporary directory. The asset hashes, so the templates, are the same."""
    return cdk.App(
        builtin_cloud_formation_validation=False,
        stack_traces=False,
        context={NO_STAGING: True, **(context or {})},
        **props,
    )


def settings_key(settings: dict[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True)


@cache
def _synth(key: str) -> tuple[GpuPoolStack, Template]:
    app = unvalidated_app()
    stack = GpuPoolStack(app, "Test", settings=AppSettings.model_validate(json.loads(key)))
    return stack, Template.from_stack(stack)


def synth(settings: dict[str, Any]) -> Template:
    """The template for these app settings; synthesized once per test run (a template one xdist
    worker synthesized, the others read: run_cache.py)."""
    return _template(settings_key(settings))


@cache
def _template(key: str) -> Template:
    if not sharing():
        return _synth(key)[1]
    template, synthesized_here = shared_json(f"template-{key_of(key)}", lambda: _json(key))
    return _synth(key)[1] if synthesized_here else Template.from_json(template)


def _json(key: str) -> dict[str, Any]:
    return _synth(key)[1].to_json()


def synth_stack(settings: dict[str, Any]) -> GpuPoolStack:
    return _synth(settings_key(settings))[0]


def render(value: Any) -> Any:
    """Resolve Fn::Join of strings; other intrinsics become readable placeholders."""
    if isinstance(value, dict) and len(value) == 1:
        ((fn, arg),) = value.items()
        if fn == "Fn::Join":
            separator, parts = arg
            return separator.join(str(render(p)) for p in parts)
        if fn == "Ref":
            return f"<Ref:{arg}>"
        if fn == "Fn::GetAtt":
            return f"<GetAtt:{arg[0]}.{arg[1]}>"
    if isinstance(value, dict):
        return {k: render(v) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v) for v in value]
    return value


def resources(template: Template, type_name: str) -> dict[str, dict[str, Any]]:
    return template.find_resources(type_name)


def only(mapping: dict[str, Any]) -> tuple[str, Any]:
    assert len(mapping) == 1, f"expected exactly one, found {list(mapping)}"
    return next(iter(mapping.items()))


def sdk_call(resource: dict[str, Any], phase: str = "Create") -> dict[str, Any]:
    """The AWS SDK call an AwsCustomResource makes in a phase, tokens as placeholders."""
    return json.loads(render(resource["Properties"][phase]))


def helm_values(resource: dict[str, Any]) -> dict[str, Any]:
    return json.loads(render(resource["Properties"]["Values"]))


def ref_of(template: Template, type_name: str, predicate=lambda props: True) -> str:
    matches = [k for k, r in resources(template, type_name).items() if predicate(r["Properties"])]
    assert len(matches) == 1, matches
    return matches[0]


_K8S_EFFECT = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}


def node_of(nodegroup_props: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The labels and taints (Kubernetes spelling) a node group's nodes join with."""
    taints = [
        {"key": t["Key"], "value": t.get("Value", ""), "effect": _K8S_EFFECT[t["Effect"]]}
        for t in nodegroup_props.get("Taints", [])
    ]
    return nodegroup_props["Labels"], taints


def tags_by_nodegroup(template):
    """{(instance types, node group id): {tag key: value}} from each group's tag resource."""
    nodegroups = resources(template, "AWS::EKS::Nodegroup")
    result = {}
    for props in (r["Properties"] for r in resources(template, RESOURCE_TYPE).values()):
        nodegroup_id = render(props["NodegroupName"]).removeprefix("<GetAtt:").split(".")[0]
        key = (tuple(nodegroups[nodegroup_id]["Properties"]["InstanceTypes"]), nodegroup_id)
        result[key] = {render(t["Key"]): t["Value"] for t in props["Tags"]}
    return result


def asg_names_by_types(template):
    """{instance types: the ASG name token (the tag resource's AsgName) other parts use}."""
    return {
        types: f"<GetAtt:{logical_id}.AsgName>"
        for logical_id, resource in resources(template, RESOURCE_TYPE).items()
        for (types, nodegroup_id) in tags_by_nodegroup(template)
        if render(resource["Properties"]["NodegroupName"]).startswith(f"<GetAtt:{nodegroup_id}.")
    }


def autoscaler_priorities(template) -> dict[int, list[str]]:
    """The priority expander's config, as CA parses the ConfigMap's `priorities` YAML
    (map[int][]string, expander/priority/priority.go), ASG names as placeholders."""
    import yaml

    from gpu_pool.cdk.autoscaling.autoscaler import PRIORITIES_CONFIG_MAP

    found = []
    for resource in resources(template, "Custom::AWSCDK-EKS-KubernetesResource").values():
        for manifest in json.loads(render(resource["Properties"]["Manifest"])):
            if manifest["kind"] == "ConfigMap" and (
                manifest["metadata"]["name"] == PRIORITIES_CONFIG_MAP
            ):
                found.append(yaml.safe_load(manifest["data"]["priorities"]))
    assert len(found) == 1, found
    return {int(rank): regexes for rank, regexes in found[0].items()}


HELM = "Custom::AWSCDK-EKS-HelmChart"


def releases(template, chart: str) -> dict[str, Any]:
    """The template's Helm releases of `chart`, by logical id."""
    return {k: r for k, r in resources(template, HELM).items() if r["Properties"]["Chart"] == chart}


def pool_nodes(template) -> list[tuple[str | None, dict, list]]:
    """Each node group's (pool, labels, taints); the system group's pool is None."""
    found = []
    for resource in resources(template, "AWS::EKS::Nodegroup").values():
        labels, taints = node_of(resource["Properties"])
        found.append((labels.get("gpu-pool.io/pool"), labels, taints))
    return found


def write_assembly(directory, template: dict, environment: str = "aws://123456789012/us-east-1"):
    """`directory`/cdk.out holding `template` as stack GpuPool in `environment`, as a
    synthesized cloud assembly names it (what `gpu-pool replacements --cdk-out` reads)."""
    import json

    out = directory / "cdk.out"
    out.mkdir()
    (out / "GpuPool.template.json").write_text(json.dumps(template))
    manifest = {
        "artifacts": {
            "GpuPool": {
                "type": "aws:cloudformation:stack",
                "environment": environment,
                "properties": {"templateFile": "GpuPool.template.json"},
            }
        }
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out
