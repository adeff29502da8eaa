"""The volume key's grant to EC2 Auto Scaling's service-linked role (handler/index.py, resource
type of cdk/nodes/volume_key.py), run against moto's server made strict where moto is more lenient
than AWS (tests/support/strict_aws.py: CreateGrant's Name makes a retry return the same grant;
CreateServiceLinkedRole refuses a role that exists).

The grant is what the EC2 Auto Scaling user guide has a key's user create ("Required AWS KMS
key policy for use with encrypted volumes", Example 2): grantee the service-linked role, its
operations. Read back with ListGrants after each CloudFormation event."""

from __future__ import annotations

import contextlib
import itertools

import boto3
import pytest
from botocore.exceptions import ClientError

from gpu_pool.cdk.nodegroups.handler import index
from gpu_pool.cdk.nodes.volume_key import RESOURCE_TYPE
from gpu_pool.model.volume_keys import GRANT_OPERATIONS, autoscaling_role_arn
from tests.support.strict_aws import StrictAws

ROLE = autoscaling_role_arn("aws", "123456789012")  # moto's default account
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/gpu-pool/0f1e2d3c-4b5a-6978"
_requests = itertools.count()


@pytest.fixture
def kms(aws_api, monkeypatch):
    strict = StrictAws.install(monkeypatch)
    yield boto3.client("kms")
    assert not strict.invalid_calls()


def _event(request: str, key: str, physical_id: str | None = None) -> dict:
    event = {
        "RequestType": request,
        "ResourceType": RESOURCE_TYPE,
        "StackId": STACK_ID,
        "RequestId": f"request-{next(_requests)}",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
            "KeyArn": key,
            "GranteePrincipal": ROLE,
            "Operations": list(GRANT_OPERATIONS),
        },
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    return event


def _grants(kms, key: str) -> list[tuple[str, list[str]]]:
    return [
        (g["GranteePrincipal"], sorted(g["Operations"]))
        for g in kms.list_grants(KeyId=key)["Grants"]
    ]


def test_create_gives_the_service_linked_role_the_guides_grant_once(kms):
    key = kms.create_key()["KeyMetadata"]["Arn"]
    first = index.on_event(_event("Create", key))
    # A retried Create (the provider framework retries a failed invocation) adds no grant.
    again = index.on_event(_event("Create", key))
    expected = sorted(
        ["Encrypt", "Decrypt", "ReEncryptFrom", "ReEncryptTo", "GenerateDataKey",
         "GenerateDataKeyWithoutPlaintext", "DescribeKey", "CreateGrant"]
    )  # fmt: skip
    assert _grants(kms, key) == [(ROLE, expected)]
    assert first == again
    assert first["PhysicalResourceId"].startswith(f"{key}/grant/")
    # EC2 Auto Scaling's service-linked role exists once the grant does.
    assert boto3.client("iam").get_role(RoleName="AWSServiceRoleForAutoScaling")


def test_a_new_key_is_a_new_grant_and_delete_revokes_the_old_one(kms):
    old_key = kms.create_key()["KeyMetadata"]["Arn"]
    new_key = kms.create_key()["KeyMetadata"]["Arn"]
    created = index.on_event(_event("Create", old_key))["PhysicalResourceId"]
    updated = index.on_event(_event("Update", new_key, created))["PhysicalResourceId"]
    assert updated.startswith(f"{new_key}/grant/")
    # CloudFormation deletes the old physical id after the update.
    index.on_event(_event("Delete", old_key, created))
    assert _grants(kms, old_key) == []
    assert [g for g, _ in _grants(kms, new_key)] == [ROLE]
    # A grant already revoked, or a Create that failed before any grant, deletes cleanly.
    index.on_event(_event("Delete", old_key, created))
    index.on_event(_event("Delete", old_key, "request-0"))


def test_a_role_created_now_is_retried_until_kms_sees_it(kms, monkeypatch):
    """Review of #38: in an account without the service-linked role, the handler creates it and
    grants to it at once; IAM is eventually consistent (IAM user guide, "Changes that I make
    are not always immediately visible"), so KMS may answer InvalidArnException for a few
    seconds. The grant is retried (without a real wait here) instead of failing the deploy."""
    from botocore.awsrequest import AWSResponse

    refused = itertools.count()
    waits: list[float] = []

    def not_yet_visible(**_):
        if next(refused) < 2:
            return AWSResponse("https://kms.local/", 400, {}, None), {
                "Error": {"Code": "InvalidArnException", "Message": "Invalid principal"}
            }
        return None

    iam = boto3.client("iam")
    with contextlib.suppress(iam.exceptions.NoSuchEntityException):  # an earlier test's
        iam.delete_role(RoleName="AWSServiceRoleForAutoScaling")
    boto3.DEFAULT_SESSION.events.register("before-call.kms.CreateGrant", not_yet_visible)
    monkeypatch.setattr(index, "sleep", waits.append)
    key = kms.create_key()["KeyMetadata"]["Arn"]
    created = index.on_event(_event("Create", key))
    assert created["PhysicalResourceId"].startswith(f"{key}/grant/")
    assert waits == [2, 4]


def test_an_invalid_grantee_of_a_role_that_existed_fails_at_once(kms, monkeypatch):
    """Only a role created by this request is waited for: otherwise the refusal is real."""
    from botocore.awsrequest import AWSResponse

    iam = boto3.client("iam")
    with contextlib.suppress(iam.exceptions.InvalidInputException):  # an earlier test's
        iam.create_service_linked_role(AWSServiceName="autoscaling.amazonaws.com")

    def refused(**_):
        return AWSResponse("https://kms.local/", 400, {}, None), {
            "Error": {"Code": "InvalidArnException", "Message": "Invalid principal"}
        }

    boto3.DEFAULT_SESSION.events.register("before-call.kms.CreateGrant", refused)
    monkeypatch.setattr(index, "sleep", lambda seconds: pytest.fail("waited"))
    key = kms.create_key()["KeyMetadata"]["Arn"]
    with pytest.raises(ClientError, match="InvalidArnException"):
        index.on_event(_event("Create", key))
