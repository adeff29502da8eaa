"""#39 item 4: the vCPU quota lookup the project's CDK CLI plugin answers
(gpu_pool/lookups/quotas.py, run by cdk-plugin/index.js). moto (5.x) serves Service Quotas
only for service `vpc`, so the calls go to boto3's own client with botocore's Stubber, which
holds each request and response to the Service Quotas API model."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from gpu_pool.lookups.quotas import quota_value
from tests.support.plugin import ask_without_credentials


class _Session:
    def __init__(self, client):
        self._client = client

    def client(self, service: str):
        assert service == "service-quotas"
        return self._client


def _quota(code: str, value: float) -> dict:
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "Value": value}}


def test_the_value_is_the_accounts_applied_quota():
    client = boto3.client("service-quotas", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response(
            "get_service_quota",
            _quota("L-417A185B", 384.0),
            {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
        )
        assert quota_value(_Session(client), "L-417A185B") == 384.0


def test_a_quota_never_applied_is_aws_default():
    """GetServiceQuota answers NoSuchResourceException for a quota without an applied value
    (Service Quotas API Reference); the default then holds."""
    client = boto3.client("service-quotas", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("get_service_quota", "NoSuchResourceException", expected_params=None)
        stub.add_response(
            "get_aws_default_service_quota",
            _quota("L-DB2E81BA", 0.0),
            {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"},
        )
        assert quota_value(_Session(client), "L-DB2E81BA") == 0.0


def test_the_plugin_answers_the_quota_provider_through_the_module(tmp_path):
    """The plugin registers `gpu-pool-vcpu-quota` and runs gpu_pool.lookups.quotas: without
    credentials its one-line error is the lookup's error (the app's GP-REGION-08 quotes it)."""
    props = {"account": "123456789012", "region": "us-east-1", "quotaCode": "L-417A185B"}
    assert ask_without_credentials(tmp_path, "gpu-pool-vcpu-quota", props) == {
        "error": "gpu-pool: cannot look up quota L-417A185B of us-east-1 for account "
        "123456789012: no AWS credentials (environment, AWS_PROFILE or ~/.aws) for account "
        "123456789012; the CDK CLI's --profile does not reach context provider plugins: set "
        "AWS_PROFILE"
    }
