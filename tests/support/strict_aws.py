"""AWS as its documentation describes it, where moto is more lenient, for the handler tests.

`StrictAws.install` gives boto3 a fresh default session (the one `boto3.client` uses, so the
handler's clients and the tests' own), whose clients
- record every call they make, so a test can check each against botocore's service model
  (`invalid_calls`) however the clients' own parameter validation is configured;
- see the rules below, each enforced at the call and named after its source. moto (5.x) keeps
  none of them: it deletes a tag whatever Value names it, takes any number of tags, and stores
  any scaling config.

Reads and repairs of moto's state go through a second, plain session, which sees no rules.
Each rule is shown failing against the bug it guards against in
tests/unit/test_nodegroup_handler.py.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.session
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.loaders import create_loader
from botocore.model import OperationModel
from botocore.validate import ParamValidator

# EC2 Auto Scaling user guide, "Tag Auto Scaling groups and instances"
# (https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-tagging.html),
# "Tag naming and usage restrictions": "The maximum number of tags per resource is 50." and
# "The maximum number of tags that you can add or remove using a single call is 25."
TAGS_PER_ASG = 50
TAGS_PER_CALL = 25

# One model loader for every test's sessions: it parses each service's JSON model once, where a
# fresh session parses it again for its first client (most of a handler test's time).
_MODELS = create_loader()


def _session() -> boto3.Session:
    core = botocore.session.Session()
    core.register_component("data_loader", _MODELS)
    return boto3.Session(botocore_session=core)


@dataclass(frozen=True)
class Call:
    """One API call as the caller passed it, before botocore validated or serialized it."""

    operation: OperationModel
    params: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.operation.service_model.service_name}.{self.operation.name}"


class StrictAws:
    """A boto3 session with the rules above and a record of its calls (see the module)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.session = _session()
        self._plain = _session()
        events = self.session.events
        # provide-client-params comes before before-parameter-build, where the rules run, and
        # before botocore's own validation: a call a rule or botocore refuses is still recorded.
        events.register("provide-client-params", self._record)
        events.register(
            "before-parameter-build.auto-scaling.CreateOrUpdateTags", self._create_or_update_tags
        )
        events.register("before-parameter-build.auto-scaling.DeleteTags", self._delete_tags)
        events.register("after-call.auto-scaling.DeleteTags", self._restore_kept_tags)
        events.register(
            "before-parameter-build.eks.UpdateNodegroupConfig", self._update_nodegroup_config
        )
        events.register(
            "before-parameter-build.iam.CreateServiceLinkedRole", self._create_service_linked_role
        )
        events.register("before-parameter-build.kms.CreateGrant", self._create_grant)
        for operation in ("iam.CreateServiceLinkedRole", "kms.CreateGrant"):
            events.register(f"before-call.{operation}", self._answer)

    @classmethod
    def install(cls, monkeypatch: Any) -> StrictAws:
        """Make boto3.client() (the handler's and the tests') use a strict session for one test.
        The caller must already point boto3 at the local API (the aws_api fixture)."""
        strict = cls()
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", strict.session)
        return strict

    def invalid_calls(self) -> list[str]:
        """Every recorded call that botocore's service model refuses (names, types, required
        members, ranges), with botocore's report."""
        validator = ParamValidator()
        reports = [
            (call, validator.validate(call.params, call.operation.input_shape))
            for call in self.calls
        ]
        return [f"{call.name}: {r.generate_report()}" for call, r in reports if r.has_errors()]

    # -- recording ---------------------------------------------------------------------------

    def _record(self, params: dict[str, Any], model: OperationModel, **_: Any) -> None:
        self.calls.append(Call(model, copy.deepcopy(params)))

    # -- EC2 Auto Scaling ----------------------------------------------------------------------

    def _live_tags(self, asgs: set[str]) -> dict[tuple[str, str], dict[str, Any]]:
        """{(ASG, key): the tag as DescribeAutoScalingGroups returns it}."""
        groups = self._plain.client("autoscaling").describe_auto_scaling_groups(
            AutoScalingGroupNames=sorted(asgs)
        )["AutoScalingGroups"]
        return {(t["ResourceId"], t["Key"]): t for group in groups for t in group["Tags"]}

    def _create_or_update_tags(self, params: dict[str, Any], **_: Any) -> None:
        tags = params.get("Tags", [])
        _at_most_per_call(tags, "CreateOrUpdateTags")
        # The error is the limit error CreateOrUpdateTags documents, "LimitExceeded: You have
        # already reached a limit for your Amazon EC2 Auto Scaling resources" (API reference,
        # https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_CreateOrUpdateTags.html).
        # The count is the group's tags after the call: keys it overwrites do not count twice.
        live = self._live_tags({t["ResourceId"] for t in tags})
        after = Counter(
            asg for asg, _key in live.keys() | {(t["ResourceId"], t["Key"]) for t in tags}
        )
        for asg, count in after.items():
            if count > TAGS_PER_ASG:
                raise _error(
                    "CreateOrUpdateTags",
                    "LimitExceeded",
                    f"{asg} would have {count} tags; at most {TAGS_PER_ASG} per group",
                )

    def _delete_tags(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        # EC2 Auto Scaling user guide, "Delete tags"
        # (https://docs.aws.amazon.com/autoscaling/ec2/userguide/delete-tag.html): "You must
        # specify the tag key, but you don't have to specify the value. If you specify a value
        # and the value is incorrect, the tag is not deleted." moto deletes by key alone, so the
        # tags AWS would keep are noted here and put back once moto has deleted them.
        tags = params.get("Tags", [])
        _at_most_per_call(tags, "DeleteTags")
        live = self._live_tags({t["ResourceId"] for t in tags})
        context["strict_aws_kept"] = [
            live[(t["ResourceId"], t["Key"])]
            for t in tags
            if "Value" in t
            and (t["ResourceId"], t["Key"]) in live
            and live[(t["ResourceId"], t["Key"])]["Value"] != t["Value"]
        ]

    def _restore_kept_tags(self, context: dict[str, Any], **_: Any) -> None:
        kept = context.get("strict_aws_kept")
        if kept:
            self._plain.client("autoscaling").create_or_update_tags(Tags=kept)

    # -- EKS -----------------------------------------------------------------------------------

    def _update_nodegroup_config(self, params: dict[str, Any], **_: Any) -> None:
        # EKS API reference, NodegroupScalingConfig
        # (https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupScalingConfig.html):
        # maxSize "Valid Range: Minimum value of 1", minSize and desiredSize "Minimum value of 0"
        # (botocore's model: shapes Capacity min 1, ZeroCapacity min 0); "When updating a node
        # group, you can specify any or none of the properties", so the rules hold for the
        # group's config after the update, the live values filling in what the call leaves out.
        # That min <= desired <= max is not on that page; EKS answers InvalidParameterException,
        # e.g. "Minimum capacity 8 can't be greater than desired size 4"
        # (terraform-aws-modules/terraform-aws-eks#3306, where only min and max were sent) and
        # "desiredSize can't be greater than maxSize"
        # (ministryofjustice/cloud-platform-infrastructure#4595).
        sent = params.get("scalingConfig")
        if not sent:
            return
        live = self._plain.client("eks").describe_nodegroup(
            clusterName=params["clusterName"], nodegroupName=params["nodegroupName"]
        )["nodegroup"]["scalingConfig"]
        after = {**live, **sent}
        low, desired, high = after["minSize"], after["desiredSize"], after["maxSize"]
        problem = (
            f"maxSize {high} is less than 1"
            if high < 1
            else f"minSize {low} can't be greater than maxSize {high}"
            if low > high
            else f"Minimum capacity {low} can't be greater than desired size {desired}"
            if low > desired
            else f"desiredSize {desired} can't be greater than maxSize {high}"
            if desired > high
            else None
        )
        if problem:
            raise _error("UpdateNodegroupConfig", "InvalidParameterException", problem)

    # -- IAM and KMS ---------------------------------------------------------------------------

    def _create_service_linked_role(
        self, params: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        # IAM refuses a service-linked role that exists with InvalidInput, "Service role name
        # AWSServiceRoleForAutoScaling has been taken in this account, please try a different
        # suffix." (as recorded in DataDog/pathfinding-labs#23); moto answers EntityAlreadyExists.
        # Answered as IAM's error response (_answer), so the client raises its modeled exception.
        service = params.get("AWSServiceName", "")
        roles = self._plain.client("iam").list_roles(PathPrefix=f"/aws-service-role/{service}/")
        for role in roles["Roles"]:
            context["strict_aws_answer"] = _failure(
                "InvalidInput",
                f"Service role name {role['RoleName']} has been taken in this account, please "
                "try a different suffix.",
            )

    def _create_grant(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        # KMS API reference, CreateGrant Name: "When this value is present, you can retry a
        # CreateGrant request with identical parameters; if the grant already exists, the
        # original GrantId is returned without creating a new grant." moto creates another, so
        # the existing grant is noted here and answered before the call reaches moto.
        if "Name" not in params:
            return
        wanted = (params["Name"], params["GranteePrincipal"], sorted(params["Operations"]))
        grants = self._plain.client("kms").list_grants(KeyId=params["KeyId"])["Grants"]
        for grant in grants:
            if (
                grant.get("Name"),
                grant["GranteePrincipal"],
                sorted(grant["Operations"]),
            ) == wanted:
                context["strict_aws_answer"] = (
                    AWSResponse("https://kms.local/", 200, {}, None),
                    {"GrantId": grant["GrantId"], "GrantToken": "token"},
                )

    def _answer(self, context: dict[str, Any], **_: Any) -> Any:
        """The response a rule gave in place of the local API's, if any."""
        return context.get("strict_aws_answer")


def _at_most_per_call(tags: list[dict[str, Any]], operation: str) -> None:
    if len(tags) > TAGS_PER_CALL:
        # The error code AWS answers with is not documented; ValidationError is its generic one.
        raise _error(
            operation, "ValidationError", f"{len(tags)} tags; at most {TAGS_PER_CALL} per call"
        )


def _failure(code: str, message: str) -> tuple[AWSResponse, dict[str, Any]]:
    """An error response as botocore parses one: the client raises its modeled exception."""
    return AWSResponse("https://aws.local/", 400, {}, None), {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }


def _error(operation: str, code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)
