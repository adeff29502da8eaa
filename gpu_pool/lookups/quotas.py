"""The answer to the app's vCPU quota lookup: the value of an EC2 vCPU quota (model/quotas.py)
for the stack's account in its Region, from Service Quotas.

The CDK CLI asks the project's context provider plugin (cdk-plugin/index.js), which runs this
module (`python3 -m gpu_pool.lookups.quotas`) with the lookup's props as JSON on stdin: account,
region, quotaCode and lookupRoleArn. It prints the value (vCPUs) as JSON; on a failure one line
on stderr and exit 1, which the plugin hands to the CLI as the lookup's error. GetServiceQuota
answers the account's applied value; a quota the account never had applied answers
NoSuchResourceException, and then AWS's default (GetAWSDefaultServiceQuota) is the value
(Service Quotas API Reference). The credentials: gpu_pool/lookups/session.py.
"""

from __future__ import annotations

import sys
from typing import Any

from botocore.exceptions import ClientError

from gpu_pool.lookups.session import answer_lookup
from gpu_pool.model.quotas import SERVICE_CODE


def quota_value(session: Any, code: str) -> float:
    """The value of quota `code` of service ec2 for the session's account and Region."""
    quotas = session.client("service-quotas")
    try:
        found = quotas.get_service_quota(ServiceCode=SERVICE_CODE, QuotaCode=code)
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") != "NoSuchResourceException":
            raise
        found = quotas.get_aws_default_service_quota(ServiceCode=SERVICE_CODE, QuotaCode=code)
    return float(found["Quota"]["Value"])


def main() -> int:
    return answer_lookup(
        lambda props: f"quota {props['quotaCode']} of {props['region']}",
        lambda session, props: quota_value(session, props["quotaCode"]),
    )


if __name__ == "__main__":
    sys.exit(main())
