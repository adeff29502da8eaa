"""What the stack's Region offers the pools, read once per fact and cached in cdk.context.json.

Three CDK context lookups, which the CDK CLI answers when credentials exist and every later synth
reads from cdk.context.json without an account (as the Capacity Block lookup,
capacity/reservations.py):

- the zones that offer an instance type: EC2 DescribeInstanceTypeOfferings, which no built-in
  context provider makes. The project's CDK CLI plugin (cdk-plugin/, loaded through cdk.json
  `plugin`) answers provider `plugin` with pluginName `gpu-pool-instance-type-offerings`;
- the value of each EC2 vCPU quota the pools run under (model/quotas.py): the same plugin, with
  pluginName `gpu-pool-vcpu-quota`;
- whether an EKS NVIDIA AMI type is published for the cluster's minor: its public SSM parameter
  (plan/region.py), through the built-in `ssm` provider with a default value, which the CLI
  caches for a parameter that does not exist.

They are on only where the app asks for them: context `gpu-pool:region-lookups: true`, which
this project's cdk.json sets beside `plugin: [gpu-pool-cdk-plugin]`. Off by default: a user's own
app, or a CI synth that never looked these up, asks nothing new. An environment-agnostic stack
looks nothing up. Until an answer is cached the fact is unknown and judges nothing, and a synth
that ends so names it (GP-REGION-08, lookups/context.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial

from aws_cdk import Stack, Token
from constructs import Construct

from gpu_pool.cdk.lookups.context import NOT_ASKED, looked_up
from gpu_pool.model.ami import nvidia_ami_type
from gpu_pool.model.findings import Finding, warning
from gpu_pool.model.quotas import QUOTA_PLUGIN, VcpuQuota, read_command
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.quota import quota_needs
from gpu_pool.plan.region import RegionFacts, ami_parameter, pool_ami_types, pool_instance_types
from gpu_pool.settings import AppSettings

REGION_LOOKUPS = "gpu-pool:region-lookups"  # the context key that turns the lookups on
OFFERINGS_PLUGIN = "gpu-pool-instance-type-offerings"  # cdk-plugin/index.js registers it
# Set to "1" by cdk-plugin/index.js in the CDK CLI's process once it has registered its
# provider, so in the app the CLI runs: a CLI without registerContextProviderAlpha (or without
# the plugin in cdk.json) fails a synth that asks the provider, so the app does not ask it.
PLUGIN_LOADED = "GPU_POOL_CDK_PLUGIN"
# cloud_assembly_schema.ContextProvider.AVAILABILITY_ZONE_PROVIDER, and the zones aws-cdk-lib's
# Stack.availabilityZones answers before its lookup is cached (core/lib/stack.ts).
AVAILABILITY_ZONES_PROVIDER = "availability-zones"
DUMMY_ZONES = ("dummy1a", "dummy1b", "dummy1c")
# Why the offerings are not asked without the plugin.
NO_PLUGIN = (
    "the CDK CLI did not load gpu-pool-cdk-plugin, which cdk.json's `plugin` names: a CLI "
    "without registerContextProviderAlpha, or an app whose cdk.json lacks it (docs/region.md)"
)
PLUGIN_PROVIDER = "plugin"  # cloud_assembly_schema.ContextProvider.PLUGIN
_SSM_PROVIDER = "ssm"  # cloud_assembly_schema.ContextProvider.SSM_PARAMETER_PROVIDER
# The first pass's answer, never a real one (a zone list): as the CLI's own dummy zones.
_NOT_LOOKED_UP = ["dummy1a"]
# The quota lookup's first-pass answer, never a real one (a number).
_NO_QUOTA = "not-looked-up"
# What the `ssm` provider caches for a parameter that does not exist (its default value).
_NOT_PUBLISHED = "not-published"


def region_lookups(scope: Construct) -> bool:
    """Whether the app asks for region lookups: context `gpu-pool:region-lookups` true (from
    cdk.json) or "true" (from `-c`)."""
    return scope.node.try_get_context(REGION_LOOKUPS) in (True, "true")


def region_facts(
    scope: Construct, plans: Sequence[PoolPlan], minor: str | None
) -> RegionFacts | None:
    """The stack's Region's offerings of the pools' instance types and its EKS NVIDIA AMI types
    for `minor` (None: the cluster's minor is not known yet, an existing cluster not looked
    up, whose unchecked fact names it: no AMI type is looked up for a minor it may not run),
    as cached; None without `gpu-pool:region-lookups` (true, or "true" from
    `-c`) and for an environment-agnostic stack (no lookup is possible). A fact not cached is
    absent, and GP-REGION-08 names it (cdk/lookups/context.py)."""
    stack = Stack.of(scope)
    if not region_lookups(scope):
        return None
    if Token.is_unresolved(stack.account) or Token.is_unresolved(stack.region):
        return None
    unaskable = plugin_unaskable()
    offerings = {}
    for name, setting in _instance_types(plans).items():
        zones = looked_up(
            scope,
            provider=PLUGIN_PROVIDER,
            props={"pluginName": OFFERINGS_PLUGIN, "instanceType": name},
            dummy=_NOT_LOOKED_UP,
            unchecked=partial(_offerings_unchecked, stack, name, setting),
            cannot_ask=unaskable,
        )
        if zones is not None:
            offerings[name] = tuple(zones)
    quotas = {}
    for quota, pools in quota_needs(plans).items():
        # The first pool that counts against it names the setting.
        setting = f"{pools[0][0].setting}.max_size"
        value = looked_up(
            scope,
            provider=PLUGIN_PROVIDER,
            props={"pluginName": QUOTA_PLUGIN, "quotaCode": quota.code},
            dummy=_NO_QUOTA,
            unchecked=partial(_quota_unchecked, stack, quota, setting),
            cannot_ask=unaskable,
            # It feeds a warning only (GP-REGION-09): no deploy waits for it.
            blocks_deploy=False,
        )
        if value is not None:
            quotas[quota.code] = float(value)
    ami_types = _ami_types(scope, plans, minor) if minor is not None else {}
    return RegionFacts(stack.region, offerings, ami_types, quotas)


def plugin_unaskable() -> str | None:
    """Why the plugin's lookups cannot be asked in this run; None: they can (the CLI loaded it).
    The CDK CLI runs the app with CDK_OUTDIR set: without it no CLI looks anything up."""
    if os.environ.get(PLUGIN_LOADED) == "1":
        return None
    return NO_PLUGIN if os.environ.get("CDK_OUTDIR") else NOT_ASKED


def _instance_types(plans: Sequence[PoolPlan]) -> dict[str, str]:
    """Each instance type of the pools -> the first pool setting that names it."""
    named: dict[str, str] = {}
    for plan in plans:
        for name in pool_instance_types(plan):
            named.setdefault(name, f"{plan.setting}.instance_types")
    return named


def _ami_types(scope: Construct, plans: Sequence[PoolPlan], minor: str) -> dict[str, bool]:
    """Each NVIDIA AMI type of the architectures the pools use (both families, so a message can
    name the one that is published) -> whether the Region publishes it; unknown ones absent."""
    stack = Stack.of(scope)
    cpus = dict.fromkeys(
        t.architecture for plan in plans if pool_ami_types(plan) for g in plan.entries for t in g
    )
    in_use = {t for plan in plans for t in pool_ami_types(plan)}
    published = {}
    for ami_type in [nvidia_ami_type(f, a) for a in cpus for f in ("AL2023", "BOTTLEROCKET")]:
        name = ami_parameter(ami_type, minor)
        value = looked_up(
            scope,
            provider=_SSM_PROVIDER,
            props={"parameterName": name},
            dummy=_NOT_PUBLISHED,
            # The CLI caches the default for a parameter that does not exist.
            must_exist=False,
            unchecked=partial(_ami_unchecked, stack, ami_type, name, minor, ami_type in in_use),
            # The other family's only names an alternative in a message.
            blocks_deploy=ami_type in in_use,
        )
        if value is not None:
            published[ami_type] = value != _NOT_PUBLISHED
    return published


def _offerings_unchecked(stack: Stack, instance_type: str, setting: str, why: str) -> Finding:
    """GP-REGION-08 for an instance type's offerings."""
    command = (
        "aws ec2 describe-instance-type-offerings --location-type availability-zone --filters "
        f"Name=instance-type,Values={instance_type} --region {stack.region}"
    )
    return unchecked_fact(
        stack, setting, f"the zones of {stack.region} that offer {instance_type}", command, why
    )


def _quota_unchecked(stack: Stack, quota: VcpuQuota, setting: str, why: str) -> Finding:
    """GP-REGION-08 for an EC2 vCPU quota (a warning's fact: it blocks no deploy)."""
    fact = f"the vCPU quota {quota.name} ({quota.code}) of account {stack.account}"
    command = read_command(quota.code, stack.region)
    return unchecked_fact(stack, setting, fact, command, why, blocks_deploy=False)


def _ami_unchecked(
    stack: Stack, ami_type: str, parameter: str, minor: str, in_use: bool, why: str
) -> Finding:
    """GP-REGION-08 for an EKS NVIDIA AMI type's parameter; only a type the pools boot blocks
    the deploy."""
    command = f"aws ssm get-parameter --name {parameter} --region {stack.region}"
    fact = f"whether {stack.region} publishes {ami_type} for Kubernetes {minor}"
    return unchecked_fact(
        stack, "cluster.kubernetes_version", fact, command, why, blocks_deploy=in_use
    )


def zones_shape_template(settings: AppSettings) -> bool:
    """Whether the Region's zones shape the template: a new cluster's VPC without
    `cluster.zones` takes them; otherwise they only judge the pools' zones (a warning's fact)."""
    return settings.cluster.existing is None and not settings.cluster.zones


def zones_unchecked(stack: Stack, settings: AppSettings, why: str) -> Finding:
    """GP-REGION-08 for the Region's zones. Where they shape the template its VPC holds
    placeholders, which no deploy creates, so the message names the setting that makes the
    lookup unneeded, and the deploy waits for it; otherwise it does not."""
    command = f"aws ec2 describe-availability-zones --region {stack.region}"
    fact = f"the zones of {stack.region} for account {stack.account}"
    if zones_shape_template(settings):
        then = (
            "The new VPC is built on placeholder zones (the ones the pools name, else "
            f"{', '.join(DUMMY_ZONES)}): set cluster.zones to three Availability Zones of the "
            "Region to build it without the lookup"
        )
        return unchecked_fact(stack, "cluster.zones", fact, command, why, then)
    then = "The pools' zones and Local Zones are not judged against them"
    return unchecked_fact(stack, "cluster.zones", fact, command, why, then, blocks_deploy=False)


def unchecked_fact(
    stack: Stack,
    setting: str,
    fact: str,
    command: str,
    why: str,
    then: str = "",
    *,
    blocks_deploy: bool = True,
) -> Finding:
    """GP-REGION-08: a fact of the stack's Region the synth did not check (docs/region.md): the
    fact, why, what follows (`then`), the command that reads it, the synth that checks and
    caches it, and whether the deploy waits for it (`blocks_deploy`: a fact a rule that stops
    the synth reads, or one the template is built from)."""
    until = (
        "Until then gpu-pool replacements (./dev deploy) and the template's own rule refuse "
        "its deploy"
        if blocks_deploy
        else "It feeds only a warning, so the deploy does not wait for it"
    )
    return warning(
        "GP-REGION-08",
        setting,
        f"not checked ({why.rstrip('.')}): {fact}. {then + '. ' if then else ''}Read it with "
        f"`{command}`; a synth with credentials of account {stack.account} checks it and "
        f"caches the answer in cdk.context.json. {until}",
    )
