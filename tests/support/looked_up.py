"""Synthesizing an environment-bound stack as `cdk synth` does once the availability-zones lookup
is cached in cdk.context.json (the CLI's second pass, the one it deploys)."""

from __future__ import annotations

import json
from functools import cache

ACCOUNT, REGION = "123456789012", "us-east-1"
# us-east-1's six Availability Zones.
ZONES = [f"{REGION}{letter}" for letter in "abcdef"]
# Local Zones the account has opted in to (Dallas, where P6e-GB200 UltraServer Capacity Blocks are
# sold; Boston). The CDK CLI's lookup (aws-cdk 2.1148.1, AZContextProviderPlugin) calls
# DescribeAvailabilityZones without a filter and keeps every `available` zone's name, so these
# come back with the Availability Zones; listed first, as the API promises no order (EC2 API
# Reference, "DescribeAvailabilityZones": "Applications should not assume the elements appear in
# a particular order").
LOCAL_ZONES = [f"{REGION}-dfw-2a", f"{REGION}-bos-1a"]
# The lookup's cached answer (cdk.context.json).
LOOKUP = {f"availability-zones:account={ACCOUNT}:region={REGION}": LOCAL_ZONES + ZONES}


@cache
def _template(key: str) -> dict:
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import AppSettings
    from tests.support.cfn import unvalidated_app

    app = unvalidated_app(context=LOOKUP)
    stack = GpuPoolStack(app, "GpuPool", settings=AppSettings.model_validate(json.loads(key)))
    template: dict = app.synth().get_stack_by_name(stack.stack_name).template
    return template


def synth_looked_up(settings: dict) -> dict:
    """The template of these app settings with the zone lookup cached; once per session."""
    return _template(json.dumps(settings, sort_keys=True))


def capacity_block_key(scope) -> str:
    """The cdk.context.json key of the Capacity Block lookup (CAPACITY_BLOCK_ID) from `scope`'s
    stack, written as the CDK CLI's Cloud Control provider is asked, independently of
    gpu_pool/cdk/capacity/reservations.py."""
    from tests.support.settings import CAPACITY_BLOCK_ID

    return reservation_key(scope, CAPACITY_BLOCK_ID)


def reservation_key(scope, reservation_id: str) -> str:
    """The cdk.context.json key of a reservation's lookup (a Capacity Block's, or with region
    lookups an ODCR's) from `scope`'s stack, as the CDK CLI's Cloud Control provider is asked."""
    import aws_cdk as cdk

    return cdk.ContextProvider.get_key(
        scope,
        provider="cc-api-provider",
        props={
            "typeName": "AWS::EC2::CapacityReservation",
            "exactIdentifier": reservation_id,
            "propertiesToReturn": ["AvailabilityZone", "InstanceType", "TotalInstanceCount"],
        },
    ).key


def offerings_key(instance_type: str, account: str = ACCOUNT, region: str = REGION) -> str:
    """The cdk.context.json key of the instance type offerings lookup, as docs/region.md writes
    it (the CDK's key form: provider, then the props sorted by name), independently of
    gpu_pool/cdk/lookups/region.py."""
    return (
        f"plugin:account={account}:instanceType={instance_type}"
        f":pluginName=gpu-pool-instance-type-offerings:region={region}"
    )


def quota_key(code: str, account: str = ACCOUNT, region: str = REGION) -> str:
    """The cdk.context.json key of the vCPU quota lookup (its value, in vCPUs), as
    docs/region.md writes it."""
    return f"plugin:account={account}:pluginName=gpu-pool-vcpu-quota:quotaCode={code}:region={region}"


def eks_cluster_key(name: str, account: str = ACCOUNT, region: str = REGION) -> str:
    """The cdk.context.json key of an existing cluster's lookup (its answer:
    gpu_pool/lookups/eks_cluster.py), as docs/existing-clusters.md writes it."""
    return (
        f"plugin:account={account}:clusterName={name}:pluginName=gpu-pool-eks-cluster"
        f":region={region}"
    )


def ami_parameter_key(parameter: str, account: str = ACCOUNT, region: str = REGION) -> str:
    """The cdk.context.json key of the `ssm` lookup of a public AMI parameter (its value, or
    `not-published` where the parameter does not exist), as docs/region.md writes it."""
    return f"ssm:account={account}:parameterName={parameter}:region={region}"


@cache
def _offline(key: str) -> tuple[dict, tuple[tuple[str, str], ...]]:
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import AppSettings
    from tests.support.cfn import unvalidated_app

    app = unvalidated_app()
    stack = GpuPoolStack(app, "GpuPool", settings=AppSettings.model_validate(json.loads(key)))
    template: dict = app.synth().get_stack_by_name(stack.stack_name).template
    unchecked = tuple(
        (e.data["rule"], e.data["message"])
        for e in stack.node.metadata
        if e.type == "gpu-pool:unchecked"
    )
    return template, unchecked


def synth_offline(settings: dict) -> tuple[dict, tuple[tuple[str, str], ...]]:
    """The template of these app settings synthesized with nothing looked up (no cdk.context.json,
    no CLI to ask), and the (rule, message) of each fact it left unchecked; once per session."""
    return _offline(json.dumps(settings, sort_keys=True))
