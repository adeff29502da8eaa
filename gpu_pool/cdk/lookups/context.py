"""The facts the CDK CLI looks up for a stack (context providers), and a synth that finishes
when it cannot: each fact left unchecked is a warning that names it and the one command that
reads it, and a `gpu-pool:unchecked` metadata entry; `gpu-pool replacements` (so `./dev deploy`)
and the template's own rule refuse the deploy of one the template rests on.

How the CDK CLI looks up (aws-cdk-lib core/lib/context-provider.ts, and the CLI's toolkit-lib
context-providers/index.ts): a first synth reports the keys it misses; the CLI asks each
provider and synthesizes again with the answers, which it saves in cdk.context.json. A lookup
that fails (no credentials, no lookup role, no plugin provider) comes back as
`{"$providerError": why, "$dontSaveContext": true}`: never saved, and aws-cdk-lib's
`ContextProvider.get_value` turns it into the stack's error, which stops the synth. So an
answered fact is read here through `get_value`, an unanswered one never is: the first pass
reports it missing through `get_value` (the CLI asks for it), a failed lookup is not asked again
and becomes an unchecked fact. Nothing unchecked is cached: the CLI saves no error, and the
placeholder the app synthesizes on is never written to cdk.context.json.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from aws_cdk import (
    Annotations,
    CfnParameter,
    CfnRule,
    CfnRuleAssertion,
    ContextProvider,
    Fn,
    Stack,
)
from constructs import Construct

from gpu_pool.cdk.report import warn
from gpu_pool.model.findings import UNCHECKED_METADATA, Finding

# cx-api PROVIDER_ERROR_KEY: where the CLI puts a failed lookup's error.
PROVIDER_ERROR = "$providerError"
NOT_ASKED = "not looked up yet: a synth without the CDK CLI, or its first pass"
# Context key: true makes an unchecked fact the stack's error, where nobody reads a warning
# before the deploy. GpuPoolPipeline sets it on each cluster's stage: a pipeline deploys what
# its synth step made, and that step's CodeBuild role looks nothing up.
UNCHECKED_FAILS = "gpu-pool:unchecked-fails"

# Why a fact is unchecked -> the warning that names it and the command that reads it.
Unchecked = Callable[[str], Finding]


def provider_error(value: object) -> str | None:
    """The CLI's error of a failed lookup held in a context value; None for an answer."""
    if isinstance(value, Mapping) and PROVIDER_ERROR in value:
        return str(value[PROVIDER_ERROR])
    return None


def looked_up(
    scope: Construct,
    *,
    provider: str,
    props: Mapping[str, Any],
    dummy: Any,
    unchecked: Unchecked,
    must_exist: bool | None = None,
    cannot_ask: str | None = None,
    blocks_deploy: bool = True,
) -> Any | None:
    """The cached answer of a lookup; None while it is unchecked (not asked yet, failed, or
    `cannot_ask`: why this CLI has no provider for it), which `unchecked(why)` then names.
    Only a lookup never tried that can be asked is reported missing: the CLI asks it once.
    `blocks_deploy` False: a fact that feeds only a warning, which stays a warning."""
    key = ContextProvider.get_key(scope, provider=provider, props=dict(props)).key
    value = scope.node.try_get_context(key)
    error = provider_error(value)
    if value is not None and error is None:
        return ContextProvider.get_value(
            scope, provider=provider, props=dict(props), dummy_value=dummy, must_exist=must_exist
        ).value
    if value is None and cannot_ask is None:
        ContextProvider.get_value(
            scope, provider=provider, props=dict(props), dummy_value=dummy, must_exist=must_exist
        )
    record_unchecked(
        scope, unchecked(error or cannot_ask or NOT_ASKED), blocks_deploy=blocks_deploy
    )
    return None


def record_unchecked(scope: Construct, finding: Finding, *, blocks_deploy: bool = True) -> None:
    """Warn `finding` on `scope` and record it in the stack's metadata, with whether the deploy
    waits for it (`blocks_deploy`: `gpu-pool replacements` and the template's rule refuse it);
    once per stack and finding (a fact may be read more than once in one synth)."""
    stack = Stack.of(scope)
    entry = {"rule": finding.rule, "message": str(finding), "blocks_deploy": blocks_deploy}
    if any(m.type == UNCHECKED_METADATA and m.data == entry for m in stack.node.metadata):
        return
    if blocks_deploy and scope.node.try_get_context(UNCHECKED_FAILS) in (True, "true"):
        Annotations.of(scope).add_error(
            f"{finding}. Here it stops the synth: what this synth makes is deployed without a "
            f"review (context {UNCHECKED_FAILS}, which GpuPoolPipeline sets)"
        )
    else:
        warn(scope, [finding])
    stack.node.add_metadata(UNCHECKED_METADATA, entry)


# The template's own refusal of a deploy, and the parameter that overrides it.
DEPLOY_GUARD, FACTS_CHECKED = "GpuPoolUncheckedFacts", "GpuPoolFactsChecked"


def guard_deploy(stack: Stack) -> None:
    """Where the stack recorded an unchecked fact: a CloudFormation rule that fails its create or
    update (CloudFormation evaluates a template's Rules before it changes anything: "Rules" in
    the CloudFormation user guide), so no deploy path, `cdk deploy` or a console's, deploys a
    template built on unchecked facts (the VPC's placeholder zones, rules that did not run).
    The parameter GpuPoolFactsChecked overrides it only with the digest of these very facts: the
    CDK CLI reuses a stack's previous parameter values, and a value given for other facts must
    not let these through. Called once the stack is built (its errors first: nothing is built
    before them)."""
    facts = sorted(
        str(m.data["message"])
        for m in stack.node.metadata
        if m.type == UNCHECKED_METADATA and m.data["blocks_deploy"]
    )
    if not facts or stack.node.try_find_child(DEPLOY_GUARD) is not None:
        return
    digest = hashlib.sha256("\n".join(facts).encode()).hexdigest()[:12]
    checked = CfnParameter(
        stack,
        FACTS_CHECKED,
        type="String",
        default="no",
        description=f"{digest}: deploy although the synth left these facts unchecked",
    )
    CfnRule(
        stack,
        DEPLOY_GUARD,
        assertions=[
            CfnRuleAssertion(
                assert_=Fn.condition_equals(checked.value_as_string, digest),
                assert_description=(
                    "gpu-pool synthesized this template without facts its account holds (the "
                    "synth's GP-REGION-08 and GP-TRAIN-20 warnings name them): synthesize it "
                    f"with credentials of account {stack.account} and deploy that, or pass "
                    f"{FACTS_CHECKED}={digest} if you checked them"
                ),
            )
        ],
    )
