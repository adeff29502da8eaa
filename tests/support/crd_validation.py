"""A custom resource checked the way the API server checks it against its CRD.

Defaults from the structural schema are applied first (the API server defaults before it
validates), then the OpenAPI v3 schema (types, required fields, enums, patterns, limits) through
jsonschema, then every `x-kubernetes-validations` CEL rule through cel-python, with the two
Kubernetes CEL library functions the Karpenter CRDs use (`find`, `split`). Transition rules
(`oldSelf`) only run on updates and are skipped; a rule that fails to compile raises, so no
rule is silently left out.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from typing import Any

import celpy
import yaml
from celpy import celtypes
from jsonschema import Draft7Validator

from tests.support.paths import FIXTURES

CRDS = FIXTURES / "karpenter-crds-1.14.1"
CRD_FILES = {
    "NodePool": CRDS / "karpenter.sh_nodepools.yaml",
    "EC2NodeClass": CRDS / "karpenter.k8s.aws_ec2nodeclasses.yaml",
    # EKS Auto Mode's NodePool is karpenter.sh/v1 too; its NodeClass schema is written from the
    # EKS user guide (the file says where).
    "NodeClass": FIXTURES / "eks-auto-mode" / "eks.amazonaws.com_nodeclasses.yaml",
    # nodeadm's (AL2023's bootstrap), at the tag its README names.
    "NodeConfig": FIXTURES / "nodeadm-v20260724" / "node.eks.aws_nodeconfigs.yaml",
    # The NVIDIA DRA driver's, from its vendored chart at the pinned version (charts/README.md).
    "ComputeDomain": FIXTURES
    / "charts"
    / "dra-driver-nvidia-gpu-0.4.1"
    / "crds"
    / "resource.nvidia.com_computedomains.yaml",
}


@cache
def schema_of(kind: str, version: str) -> dict[str, Any]:
    crd = yaml.safe_load(CRD_FILES[kind].read_text(encoding="utf-8"))
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return served["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def validate(manifest: dict[str, Any]) -> list[str]:
    """Every problem the API server would report for `manifest`; [] if it would accept it."""
    version = manifest["apiVersion"].rsplit("/", 1)[-1]
    schema = schema_of(manifest["kind"], version)
    obj = copy.deepcopy(manifest)
    _apply_defaults(schema, obj)
    problems = [
        f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
        for error in Draft7Validator(schema).iter_errors(obj)
    ]
    problems += _cel(schema, obj, "")
    return problems


def _apply_defaults(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _apply_defaults(sub, value[key])
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            _apply_defaults(schema["items"], item)


def _cel(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    problems = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if "oldSelf" in rule["rule"]:
            continue
        if not _holds(rule["rule"], value):
            problems.append(f"{path or '<root>'}: {rule['message']}")
    if isinstance(value, dict):
        for key, item in value.items():
            sub = (schema.get("properties") or {}).get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                problems += _cel(sub, item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += _cel(schema["items"], item, f"{path}[{index}]")
    return problems


def _find(text: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.StringType:
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


_ENVIRONMENT = celpy.Environment()


@cache
def _program(rule: str) -> Any:
    return _ENVIRONMENT.program(
        _ENVIRONMENT.compile(rule), functions={"find": _find, "split": _split}
    )


def _holds(rule: str, value: Any) -> bool:
    """Whether the rule holds; as in the API server, a rule that errors at runtime (such as
    int() of a non-number) rejects the object."""
    try:
        result = _program(rule).evaluate({"self": celpy.json_to_cel(value)})
    except celpy.CELEvalError:
        return False
    if not isinstance(result, celtypes.BoolType):
        raise AssertionError(f"CEL rule {rule!r} gave {result!r}, not a boolean")
    return bool(result)


def core_model_problems(manifest: dict[str, Any], model: str) -> list[str]:
    """What the official Kubernetes client's model `model` (generated from the Kubernetes
    OpenAPI of its release) makes of a built-in object: it refuses a missing required field or
    a value outside an enum, and drops a field the API does not have, so the object must come
    back unchanged."""
    from kubernetes import client

    class _Response:
        data = json.dumps(manifest)

    api = client.ApiClient()
    try:
        parsed = api.deserialize(_Response(), model)
    except (ValueError, TypeError) as err:
        return [f"{model}: {err}"]
    again = api.sanitize_for_serialization(parsed)
    return [] if again == manifest else [f"{model}: {_first_difference(manifest, again, '')}"]


def _first_difference(sent: Any, kept: Any, path: str) -> str:
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key in sent:
            if key not in kept:
                return f"{path}.{key}: not a field of the API".lstrip(".")
            if sent[key] != kept[key]:
                return _first_difference(sent[key], kept[key], f"{path}.{key}")
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        for index, (a, b) in enumerate(zip(sent, kept)):
            if a != b:
                return _first_difference(a, b, f"{path}[{index}]")
    return f"{path}: {sent!r} came back as {kept!r}".lstrip(".")
