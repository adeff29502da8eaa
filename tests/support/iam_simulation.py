"""An IAM policy simulation over the roles a synthesized template creates.

Each role's policies are read from the template (inline, `AWS::IAM::Policy`,
`AWS::IAM::ManagedPolicy`, and AWS managed policies from the vendored fixtures,
tests/support/managed_policies.py), resolved into concrete ARNs for one account, Region and
partition, and a batch of requests is evaluated by @cloud-copilot/iam-simulate (pinned in
package.json) in one Node process (tests/support/iam_simulate.mjs): Node's start-up is the
slow part on small machines.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.managed_policies import managed_policy
from tests.support.paths import ROOT

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"
# The stack name CloudFormation gives resources without a name of their own.
STACK = "Test"

NODE = ROOT / "node_modules" / ".bin" / "node"
SIMULATOR = ROOT / "node_modules" / "@cloud-copilot" / "iam-simulate" / "package.json"
SCRIPT = ROOT / "tests" / "support" / "iam_simulate.mjs"

ContextValue = str | list[str]
Policy = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Call:
    """One API request: action, the ARN it acts on ("*" for actions without resource-level
    permissions) and its request context (condition keys)."""

    action: str
    resource: str
    context: dict[str, ContextValue] = field(default_factory=dict)
    # The resource's own policy where the service reads one beside the caller's (a KMS key
    # policy: KMS allows nothing on a key its key policy does not allow or delegate to IAM).
    resource_policy: dict[str, Any] | None = None


# ---- resolving a template's policies ------------------------------------------------------


@dataclass(frozen=True)
class Environment:
    """Where a template deploys: account, Region and partition."""

    account: str = ACCOUNT
    region: str = REGION
    partition: str = PARTITION

    @property
    def stack_id(self) -> str:
        return (
            f"arn:{self.partition}:cloudformation:{self.region}:{self.account}:stack/{STACK}/"
            "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        )


COMMERCIAL = Environment()
STACK_ID = COMMERCIAL.stack_id
# The key under which a template read for the simulation carries its Environment
# (`deployed_in`); a template without one deploys in COMMERCIAL.
_ENVIRONMENT = "x-gpu-pool-environment"


def deployed_in(template: dict[str, Any], environment: Environment) -> dict[str, Any]:
    """`template`, resolved as deployed in `environment` from then on."""
    return {**template, _ENVIRONMENT: environment}


def environment_of(template: dict[str, Any]) -> Environment:
    environment: Environment = template.get(_ENVIRONMENT, COMMERCIAL)
    return environment


def _pseudo(template: dict[str, Any], name: str) -> str:
    env = environment_of(template)
    return {
        "AWS::Partition": env.partition,
        "AWS::Region": env.region,
        "AWS::AccountId": env.account,
        # China's endpoints (AWS General Reference, "Amazon Web Services in China").
        "AWS::URLSuffix": "amazonaws.com.cn" if env.partition == "aws-cn" else "amazonaws.com",
        "AWS::StackName": STACK,
        "AWS::StackId": env.stack_id,
    }[name]


# The property holding a resource's name, where it has one; else CloudFormation generates one
# from the stack and logical id (here without its random suffix).
_NAME_PROPERTY = {
    "AWS::IAM::Role": "RoleName",
    "AWS::EKS::Cluster": "Name",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Logs::LogGroup": "LogGroupName",
}
# `Fn::GetAtt <id>.Arn` by resource type, from its name (CloudFormation resource reference).
_ARN = {
    "AWS::IAM::Role": "arn:{p}:iam::{a}:role/{n}",
    "AWS::EKS::Cluster": "arn:{p}:eks:{r}:{a}:cluster/{n}",
    "AWS::SQS::Queue": "arn:{p}:sqs:{r}:{a}:{n}",
    "AWS::Lambda::Function": "arn:{p}:lambda:{r}:{a}:function:{n}",
    "AWS::Logs::LogGroup": "arn:{p}:logs:{r}:{a}:log-group:{n}:*",
    "AWS::S3::Bucket": "arn:{p}:s3:::{n}",
    "AWS::KMS::Key": "arn:{p}:kms:{r}:{a}:key/{n}",
    "AWS::CodeBuild::Project": "arn:{p}:codebuild:{r}:{a}:project/{n}",
}


def physical_name(template: dict[str, Any], logical_id: str) -> str:
    resource = template["Resources"][logical_id]
    prop = _NAME_PROPERTY.get(resource["Type"])
    name = resource["Properties"].get(prop) if prop else None
    return str(resolve(template, name)) if name is not None else f"{STACK}-{logical_id}"


def arn_of(template: dict[str, Any], logical_id: str) -> str:
    kind = template["Resources"][logical_id]["Type"]
    if kind not in _ARN:
        raise ValueError(f"no ARN format for {logical_id} ({kind}): add it to _ARN")
    env = environment_of(template)
    name = physical_name(template, logical_id)
    if kind == "AWS::IAM::Role":
        # A role's ARN has its path (IAM user guide, "IAM identifiers").
        name = template["Resources"][logical_id]["Properties"].get("Path", "/")[1:] + name
    return _ARN[kind].format(p=env.partition, r=env.region, a=env.account, n=name)


_NO_VALUE = object()


def resolve(template: dict[str, Any], value: Any) -> Any:
    """`value` with every intrinsic replaced by what CloudFormation would deploy. An
    intrinsic this cannot resolve raises, so no placeholder ever reaches the simulator."""
    if isinstance(value, list):
        return [r for r in (resolve(template, v) for v in value) if r is not _NO_VALUE]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((fn, arg),) = value.items()
        if fn == "Ref" and arg == "AWS::NoValue":
            return _NO_VALUE
        if fn == "Ref" and arg.startswith("AWS::"):
            return _pseudo(template, arg)
        if fn == "Ref":
            return physical_name(template, arg)
        if fn == "Fn::If":
            condition = resolve(template, template["Conditions"][arg[0]])
            return resolve(template, arg[1] if condition else arg[2])
        if fn == "Fn::Equals":
            return resolve(template, arg[0]) == resolve(template, arg[1])
        if fn in ("Fn::Not", "Fn::And", "Fn::Or"):
            values = [resolve(template, v) for v in arg]
            return {"Fn::Not": not values[0], "Fn::And": all(values), "Fn::Or": any(values)}[fn]
        if fn == "Condition":
            return resolve(template, template["Conditions"][arg])
        if fn == "Fn::Sub" and isinstance(arg, str):
            # Only pseudo parameters: a reference to a resource would need its attributes.
            return re.sub(r"\$\{(AWS::[A-Za-z]+)\}", lambda m: _pseudo(template, m[1]), arg)
        if fn == "Fn::GetAtt" and arg[1] == "Arn":
            return arn_of(template, arg[0])
        if fn == "Fn::Join":
            return arg[0].join(str(resolve(template, p)) for p in arg[1])
        if fn.startswith("Fn::"):
            raise ValueError(f"cannot resolve {json.dumps(value)[:200]}")
    return {k: resolve(template, v) for k, v in value.items()}


def logical_id(template: dict[str, Any], kind: str, name: str) -> str:
    """The logical id of the one resource of type `kind` whose id is `name` and CDK's
    8-character hash."""
    pattern = re.compile(re.escape(name) + r"[0-9A-F]{8}")
    found = [
        lid
        for lid, r in template["Resources"].items()
        if r["Type"] == kind and pattern.fullmatch(lid)
    ]
    assert len(found) == 1, f"{kind} {name}*: {found}"
    return found[0]


def role_id(template: dict[str, Any], name: str) -> str:
    return logical_id(template, "AWS::IAM::Role", name)


def role_policies(template: dict[str, Any], role: str) -> list[Policy]:
    """(name, resolved document) of every policy that applies to the role `role`."""
    resources = template["Resources"]
    props = resources[role]["Properties"]
    policies: list[Policy] = [
        (p["PolicyName"], resolve(template, p["PolicyDocument"])) for p in props.get("Policies", [])
    ]
    partition = environment_of(template).partition
    for arn in resolve(template, props.get("ManagedPolicyArns", [])):
        aws = managed_policy(arn)
        # AWS publishes each managed policy in every partition with that partition's ARNs;
        # the fixtures are the aws partition's.
        document = json.loads(json.dumps(aws["Document"]).replace("arn:aws:", f"arn:{partition}:"))
        policies.append((aws["PolicyName"], document))
    for lid, resource in resources.items():
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") and {
            "Ref": role
        } in resource["Properties"].get("Roles", []):
            policies.append((lid, resolve(template, resource["Properties"]["PolicyDocument"])))
    return policies


def trust_policy(template: dict[str, Any], role: str) -> dict[str, Any]:
    document: dict[str, Any] = resolve(
        template, template["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]
    )
    return document


def without_statement(policies: Sequence[Policy], statement: str) -> list[Policy]:
    """The policies without the statement whose Sid is `statement` (or, for statements
    without a Sid, every one that lists the action `statement`): what deleting it from the
    synthesized policy would leave."""
    result = []
    for name, document in policies:
        trimmed = copy.deepcopy(document)
        trimmed["Statement"] = [
            s
            for s in document["Statement"]
            if s.get("Sid") != statement and statement not in _actions(s)
        ]
        result.append((name, trimmed))
    assert result != list(policies), f"no statement {statement}"
    return result


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement.get("Action", [])
    return [actions] if isinstance(actions, str) else list(actions)


# ---- the simulation -----------------------------------------------------------------------


def session_principal(
    role_name: str, session: str = "gpu-pool-test", env: Environment = COMMERCIAL
) -> str:
    return f"arn:{env.partition}:sts::{env.account}:assumed-role/{role_name}/{session}"


def identity_request(
    principal: str, policies: Sequence[Policy], call: Call, env: Environment = COMMERCIAL
) -> dict[str, Any]:
    """A simulation of `call` by `principal`, a session of a role with `policies`, on a
    resource of `env`'s account (the principal's: a call across accounts needs the resource's
    policy too). Every request carries aws:RequestedRegion (IAM user guide, global condition
    keys)."""
    return {
        "identityPolicies": [{"name": n, "policy": d} for n, d in policies],
        "serviceControlPolicies": [],
        "resourceControlPolicies": [],
        **({"resourcePolicy": call.resource_policy} if call.resource_policy else {}),
        "request": {
            "principal": principal,
            "action": call.action,
            "resource": {"resource": call.resource, "accountId": env.account},
            "contextVariables": {"aws:RequestedRegion": env.region, **call.context},
        },
    }


def assume_request(
    principal: str,
    role_arn: str,
    trust: dict[str, Any],
    action: str,
    env: Environment = COMMERCIAL,
    context: dict[str, ContextValue] | None = None,
) -> dict[str, Any]:
    """A simulation of `principal` (a service, or a role's session) calling `action`
    (sts:AssumeRole, sts:TagSession) on the role whose trust policy is `trust`: the trust
    policy is the role's resource policy."""
    return {
        "identityPolicies": [],
        "serviceControlPolicies": [],
        "resourceControlPolicies": [],
        "resourcePolicy": trust,
        "request": {
            "principal": principal,
            "action": action,
            "resource": {"resource": role_arn, "accountId": env.account},
            "contextVariables": context or {},
        },
    }


def simulate(simulations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each simulation's outcome: result (Allowed, ImplicitlyDenied, ExplicitlyDenied or
    Error), ignoredContextKeys, allowedBy ([{policy, sid}]) or errors."""
    if not (NODE.exists() and SIMULATOR.exists()):
        raise RuntimeError(
            "the IAM simulation needs @cloud-copilot/iam-simulate and the pinned Node from "
            "package-lock.json: run `npm ci` in the repository (./dev does)"
        )
    done = subprocess.run(
        [str(NODE), str(SCRIPT)],
        input=json.dumps(list(simulations)),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"iam_simulate.mjs failed: {done.stderr}")
    outcomes: list[dict[str, Any]] = json.loads(done.stdout)
    return outcomes
