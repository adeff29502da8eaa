"""The EC2 vCPU quotas GPU instances run under: a Region's running On-Demand instances and its
Spot requests are each capped per instance family group, in vCPUs, by a Service Quotas quota of
service `ec2` (EC2 user guide, "Amazon EC2 service quotas": On-Demand Instance quotas and Spot
Instance quotas). A launch past it fails (VcpuLimitExceeded, MaxSpotInstanceCountExceeded), and
new accounts often start near zero. G and VT instances share one quota, P instances another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SERVICE_CODE = "ec2"
# The CDK CLI plugin provider that looks a quota up (cdk-plugin/index.js).
QUOTA_PLUGIN = "gpu-pool-vcpu-quota"


@dataclass(frozen=True)
class VcpuQuota:
    code: str  # the Service Quotas quota code
    name: str  # as Service Quotas names it
    # The error of a launch past it (EC2 API reference, "Error codes").
    launch_error: str = "VcpuLimitExceeded"


def read_command(code: str, region: str) -> str:
    """The AWS CLI command that reads quota `code`'s value in `region`."""
    return (
        f"aws service-quotas get-service-quota --service-code {SERVICE_CODE} "
        f"--quota-code {code} --region {region}"
    )


def quota_context_key(account: str, region: str, code: str) -> str:
    """The cdk.context.json key under which the CDK CLI caches a quota's value: the CDK's key
    form for provider `plugin` (aws-cdk-lib ContextProvider.getKey: the provider, then its
    props sorted by name), which `gpu-pool plan` reads without the CDK."""
    return f"plugin:account={account}:pluginName={QUOTA_PLUGIN}:quotaCode={code}:region={region}"


# (family group, Spot) -> quota.
_QUOTAS = {
    ("G", False): VcpuQuota("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("P", False): VcpuQuota("L-417A185B", "Running On-Demand P instances"),
    ("G", True): VcpuQuota(
        "L-3819A6DF", "All G and VT Spot Instance Requests", "MaxSpotInstanceCountExceeded"
    ),
    ("P", True): VcpuQuota(
        "L-7212CCBC", "All P Spot Instance Requests", "MaxSpotInstanceCountExceeded"
    ),
}
# The family group of an instance type: its name's letters before the generation's digit.
_GROUP = {"g": "G", "gr": "G", "vt": "G", "p": "P"}
_PREFIX = re.compile(r"^([a-z]+)\d")


def vcpu_quota(instance_type: str, spot: bool) -> VcpuQuota | None:
    """The quota `instance_type`'s vCPUs count against, On-Demand or Spot; None for a family
    outside the G/VT and P groups."""
    match = _PREFIX.match(instance_type)
    group = _GROUP.get(match.group(1)) if match else None
    return _QUOTAS[(group, spot)] if group else None


def vcpu_quotas() -> tuple[VcpuQuota, ...]:
    """Every quota of the table."""
    return tuple(_QUOTAS.values())
