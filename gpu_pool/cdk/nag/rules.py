"""gpu-pool's own cdk-nag rule pack: what AwsSolutions does not check in a native EKS stack.

cdk-nag 3.0.2's EKS rules (EKS1 public endpoint, EKS2 control-plane logs) only recognise
aws_eks (v1) clusters, so the AWS::EKS::Cluster of aws_eks_v2 is never checked; node groups and
launch templates have no rule at all. These rules read each resource as CloudFormation will see
it and run in every synth beside AwsSolutions; a finding fails the synth unless acknowledged
with a reason (`acknowledge(scope, "GpuPool-<Rule>", reason, plugin="GpuPool")`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import cdk_nag
import jsii
from aws_cdk import CfnResource, Stack
from constructs import IConstruct

PACK = "GpuPool"
OPEN = "0.0.0.0/0"

Compliance = cdk_nag.NagRuleCompliance


def _properties(node: CfnResource) -> dict[str, Any]:
    """The resource's properties, resolved, in the L1's camelCase."""
    resolved = Stack.of(node).resolve(node._cfn_properties)
    return resolved if isinstance(resolved, dict) else {}


def public_endpoint(node: CfnResource) -> Any:
    """A public API endpoint must name who may reach it; the whole internet is a finding."""
    config = _properties(node).get("resourcesVpcConfig", {})
    public = config.get("endpointPublicAccess", True)  # EKS's default is public
    cidrs = config.get("publicAccessCidrs", [OPEN])  # and open to everyone
    return Compliance.NON_COMPLIANT if public and OPEN in cidrs else Compliance.COMPLIANT


def audit_logging(node: CfnResource) -> Any:
    """The control plane must send its audit log to CloudWatch."""
    logging = _properties(node).get("logging", {}).get("clusterLogging", {})
    types = {t.get("type") for t in logging.get("enabledTypes", [])}
    return Compliance.COMPLIANT if "audit" in types else Compliance.NON_COMPLIANT


def nodegroup_launch_template(node: CfnResource) -> Any:
    """A node group needs a launch template: without one, volume encryption and IMDS are the
    account's and EKS's defaults."""
    launch_template = _properties(node).get("launchTemplate")
    return Compliance.COMPLIANT if launch_template else Compliance.NON_COMPLIANT


def encrypted_volumes(node: CfnResource) -> Any:
    """Every EBS volume a launch template defines is encrypted."""
    mappings = _properties(node).get("launchTemplateData", {}).get("blockDeviceMappings", [])
    encrypted = all(m.get("ebs", {}).get("encrypted") is True for m in mappings if "ebs" in m)
    return Compliance.COMPLIANT if encrypted else Compliance.NON_COMPLIANT


def imdsv2_required(node: CfnResource) -> Any:
    """A launch template requires IMDSv2 tokens (IMDSv1 lets any SSRF read the node's role)."""
    metadata = _properties(node).get("launchTemplateData", {}).get("metadataOptions", {})
    required = metadata.get("httpTokens") == "required"
    return Compliance.COMPLIANT if required else Compliance.NON_COMPLIANT


# (rule id suffix, resource type, check, what is wrong, why it matters)
RULES: tuple[tuple[str, str, Callable[[CfnResource], Any], str, str], ...] = (
    (
        "EKSPublicEndpoint",
        "AWS::EKS::Cluster",
        public_endpoint,
        "The EKS cluster's public API endpoint is open to 0.0.0.0/0.",
        "Anyone on the internet can reach the Kubernetes API; limit publicAccessCidrs or make "
        "the endpoint private.",
    ),
    (
        "EKSAuditLogging",
        "AWS::EKS::Cluster",
        audit_logging,
        "The EKS cluster does not send its audit log to CloudWatch.",
        "Without it nothing records who did what through the Kubernetes API.",
    ),
    (
        "NodegroupLaunchTemplate",
        "AWS::EKS::Nodegroup",
        nodegroup_launch_template,
        "The managed node group has no launch template.",
        "Its root volume is encrypted only if the account's EBS default says so, and its "
        "instance metadata options are EKS's defaults.",
    ),
    (
        "LaunchTemplateEncryptedVolumes",
        "AWS::EC2::LaunchTemplate",
        encrypted_volumes,
        "The launch template defines an EBS volume that is not encrypted.",
        "Node volumes hold container images, model weights and data.",
    ),
    (
        "LaunchTemplateIMDSv2",
        "AWS::EC2::LaunchTemplate",
        imdsv2_required,
        "The launch template allows IMDSv1.",
        "Without session tokens, a request forged through a pod can read the node role's "
        "credentials.",
    ),
)


@jsii.implements(cdk_nag.IApplyRule)
class _Apply:
    """One rule applied to one resource, as NagPack.applyRule takes it. jsii reads an
    interface's members from the class, so each is a property."""

    def __init__(
        self,
        suffix: str,
        check: Callable[[CfnResource], Any],
        info: str,
        explanation: str,
        node: CfnResource,
    ) -> None:
        self._suffix, self._check, self._info = suffix, check, info
        self._explanation, self._node = explanation, node

    @property
    def rule_suffix_override(self) -> str | None:
        return self._suffix

    @property
    def info(self) -> str:
        return self._info

    @property
    def explanation(self) -> str:
        return self._explanation

    @property
    def level(self) -> cdk_nag.NagMessageLevel:
        return cdk_nag.NagMessageLevel.ERROR

    @property
    def node(self) -> CfnResource:
        return self._node

    def rule(self, node: CfnResource) -> Any:
        return self._check(node)


class GpuPoolNagPack(cdk_nag.NagPack):
    """The rules above as a cdk-nag pack named GpuPool; add it beside AwsSolutionsChecks."""

    def __init__(self, scope: IConstruct | None = None) -> None:
        super().__init__(scope)
        self._pack_name = PACK

    @property
    def name(self) -> str:
        return PACK

    def _check_resource(self, node: CfnResource) -> None:
        resource_type = node.cfn_resource_type
        for suffix, wanted_type, check, info, explanation in RULES:
            if resource_type == wanted_type:
                # jsii reads the members at runtime; mypy wants IApplyRule's settable ones.
                rule = cast(cdk_nag.IApplyRule, _Apply(suffix, check, info, explanation, node))
                self._apply_rule(rule)
