"""The answer to the app's instance type offerings lookup: the zones of the stack's Region that
offer an instance type (EC2 DescribeInstanceTypeOfferings, location type availability-zone).

The CDK CLI asks the project's context provider plugin (cdk-plugin/index.js), which runs this
module (`python3 -m gpu_pool.lookups.offerings`) with the lookup's props as JSON on stdin: account,
region, instanceType and lookupRoleArn. It prints the zone names as a JSON list; on a failure it
prints one line on stderr and exits 1, which the plugin hands to the CLI as the lookup's error.

The credentials: gpu_pool/lookups/session.py.
"""

from __future__ import annotations

import sys
from typing import Any

from gpu_pool.lookups.session import answer_lookup


def zones_offering(session: Any, instance_type: str) -> list[str]:
    """The zones of `session`'s Region that offer `instance_type`, sorted; empty: none."""
    ec2 = session.client("ec2")
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    )
    return sorted({o["Location"] for page in pages for o in page["InstanceTypeOfferings"]})


def main() -> int:
    return answer_lookup(
        lambda props: f"the zones of {props['region']} that offer {props['instanceType']}",
        lambda session, props: zones_offering(session, props["instanceType"]),
    )


if __name__ == "__main__":
    sys.exit(main())
