"""What the stack's Region offers the pools, read once per fact and cached in cdk.context.json.

Two CDK context lookups, which the CDK CLI answers when credentials exist and every later synth
reads from cdk.context.json without an account (as the Capacity Block lookup, reservations.py):

- the zones that offer an instance type: EC2 DescribeInstanceTypeOfferings, which no built-in
  context provider makes. The project's CDK CLI plugin (cdk-plugin/, loaded through cdk.json
  `plugin`) answers provider `plugin` with pluginName `gpu-pool-instance-type-offerings`;
- whether an EKS NVIDIA AMI type is published for the cluster's minor: its public SSM parameter
  (plan/region.py), through the built-in `ssm` provider with a default value, which the CLI
  caches for a parameter that does not exist.

Both are on only where the app asks for them: context `gpu-pool:region-lookups: true`, which
this project's cdk.json sets beside `plugin: [gpu-pool-cdk-plugin]`. Off by default, because the
CLI fails a synth that asks a plugin it has not loaded, and any uncached lookup needs credentials:
a user's own app, or a CI synth without credentials that worked before, keeps working.
An environment-agnostic stack looks nothing up. Until an answer is cached (the CLI's first pass,
or a lookup that failed: the CLI shows its error) the fact is unknown and judges nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ContextProvider, Stack, Token
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from gpu_pool.model.ami import nvidia_ami_type
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.region import RegionFacts, ami_parameter, pool_ami_types, pool_instance_types

REGION_LOOKUPS = "gpu-pool:region-lookups"  # the context key that turns the lookups on
OFFERINGS_PLUGIN = "gpu-pool-instance-type-offerings"  # cdk-plugin/index.js registers it
_PLUGIN_PROVIDER = "plugin"  # cloud_assembly_schema.ContextProvider.PLUGIN
_SSM_PROVIDER = "ssm"  # cloud_assembly_schema.ContextProvider.SSM_PARAMETER_PROVIDER
# The first pass's answer, never a real one (a zone list): as the CLI's own dummy zones.
_NOT_LOOKED_UP = ["dummy1a"]
# What the `ssm` provider caches for a parameter that does not exist (its default value).
_NOT_PUBLISHED = "not-published"


def region_lookups(scope: Construct) -> bool:
    """Whether the app asks for region lookups: context `gpu-pool:region-lookups` true (from
    cdk.json) or "true" (from `-c`)."""
    return scope.node.try_get_context(REGION_LOOKUPS) in (True, "true")


def region_facts(scope: Construct, plans: Sequence[PoolPlan], minor: str) -> RegionFacts | None:
    """The stack's Region's offerings of the pools' instance types and its EKS NVIDIA AMI types
    for `minor`, as cached; None without `gpu-pool:region-lookups` (true, or "true" from
    `-c`) and for an environment-agnostic stack (no lookup is possible)."""
    stack = Stack.of(scope)
    if not region_lookups(scope):
        return None
    if Token.is_unresolved(stack.account) or Token.is_unresolved(stack.region):
        return None
    types = dict.fromkeys(t for plan in plans for t in pool_instance_types(plan))
    offerings = {}
    for name in types:
        props = {"pluginName": OFFERINGS_PLUGIN, "instanceType": name}
        zones = ContextProvider.get_value(
            scope, provider=_PLUGIN_PROVIDER, props=props, dummy_value=_NOT_LOOKED_UP
        ).value
        if zones != _NOT_LOOKED_UP:
            offerings[name] = tuple(zones)
    return RegionFacts(stack.region, offerings, _ami_types(scope, plans, minor))


def _ami_types(scope: Construct, plans: Sequence[PoolPlan], minor: str) -> dict[str, bool]:
    """Each NVIDIA AMI type of the architectures the pools use (both families, so a message can
    name the one that is published) -> whether the Region publishes it; unknown ones absent."""
    cpus = dict.fromkeys(
        t.architecture for plan in plans if pool_ami_types(plan) for g in plan.entries for t in g
    )
    published = {}
    for ami_type in [nvidia_ami_type(f, a) for a in cpus for f in ("AL2023", "BOTTLEROCKET")]:
        name = ami_parameter(ami_type, minor)
        value = ssm.StringParameter.value_from_lookup(scope, name, _NOT_PUBLISHED)
        key = ContextProvider.get_key(
            scope, provider=_SSM_PROVIDER, props={"parameterName": name}
        ).key
        # Not cached yet, or the lookup failed: the default stands for the unknown answer.
        if isinstance(scope.node.try_get_context(key), str):
            published[ami_type] = value != _NOT_PUBLISHED
    return published
