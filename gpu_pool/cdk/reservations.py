"""Capacity Blocks as EC2 describes them, read once per block and cached in cdk.context.json.

A CDK context lookup through the CDK CLI's Cloud Control provider (`cc-api-provider`,
GetResource on AWS::EC2::CapacityReservation), as the availability-zones lookup is: the CLI
reads it when credentials exist, stores it in cdk.context.json, and every later synth uses the
cached answer without an account. Until then the stack sees a placeholder, and the pool's
stated zone and type go unjudged.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ContextProvider, Stack, Token
from constructs import Construct

from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import PoolPlan

_PROPERTIES = ["AvailabilityZone", "InstanceType", "TotalInstanceCount"]
_PLACEHOLDER = {"AvailabilityZone": "dummy1a", "InstanceType": "dummy", "TotalInstanceCount": 0}


def capacity_blocks(scope: Construct, plans: Sequence[PoolPlan]) -> dict[str, ReservationFacts]:
    """Pool name -> its Capacity Block as looked up; empty for an environment-agnostic stack
    (a lookup needs an account and region) and for blocks not looked up yet."""
    stack = Stack.of(scope)
    if Token.is_unresolved(stack.account) or Token.is_unresolved(stack.region):
        return {}
    found = {}
    for plan in plans:
        reservation = plan.settings.capacity_reservation
        if reservation is None or not reservation.capacity_block or reservation.id is None:
            continue
        (value,) = ContextProvider.get_value(
            scope,
            # cloud_assembly_schema.ContextProvider.CC_API_PROVIDER, as the CLI names it.
            provider="cc-api-provider",
            props={
                "typeName": "AWS::EC2::CapacityReservation",
                "exactIdentifier": reservation.id,
                "propertiesToReturn": _PROPERTIES,
            },
            dummy_value=[_PLACEHOLDER],
        ).value
        if value["AvailabilityZone"] != _PLACEHOLDER["AvailabilityZone"]:
            found[plan.name] = ReservationFacts(
                reservation.id,
                value["AvailabilityZone"],
                value["InstanceType"],
                int(value["TotalInstanceCount"]),
            )
    return found
