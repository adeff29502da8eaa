"""Capacity Blocks (and, with region lookups, ODCRs) as EC2 describes them, read once per
reservation and cached in cdk.context.json.

A CDK context lookup through the CDK CLI's Cloud Control provider (`cc-api-provider`,
GetResource on AWS::EC2::CapacityReservation), as the availability-zones lookup is: the CLI
reads it when credentials exist, stores it in cdk.context.json, and every later synth uses the
cached answer without an account. Until then the stack sees a placeholder, the pool's stated
zone and type go unjudged, and a warning names the block, the key of its cache entry and how to
get it: the CLI's own error, when it has no credentials, names neither.

A block EC2 does not have in the stack's Region and account (bought in another Region, or a
mistyped id) is not the CLI's error: the lookup may find nothing (`must_exist=False`), and the CLI
then caches the placeholder, which, once in cdk.context.json, stands for "none here" (GP-REGION-07).

An ODCR named by id is looked up the same way only where the app turns region lookups on
(`gpu-pool:region-lookups`, cdk/lookups/region.py): before, an app with ODCRs made no lookup,
and one that never asked for region lookups keeps synthesizing without credentials. Only its
Region and account are judged (GP-REGION-05/07); the rules of a pool's zone, type and size
against its reservation stay Capacity Block rules (GP-TRAIN-15 to 17, GP-APP-20, the UltraServer
rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from aws_cdk import ContextProvider, Stack, Token
from constructs import Construct

from gpu_pool.cdk.lookups.context import looked_up
from gpu_pool.cdk.lookups.region import region_lookups, unchecked_fact
from gpu_pool.model.findings import Finding, warning
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import PoolPlan

_PROPERTIES = ["AvailabilityZone", "InstanceType", "TotalInstanceCount"]
_PLACEHOLDER = {"AvailabilityZone": "dummy1a", "InstanceType": "dummy", "TotalInstanceCount": 0}
_PROVIDER = "cc-api-provider"  # cloud_assembly_schema.ContextProvider.CC_API_PROVIDER


def looked_up_reservations(
    scope: Construct, plans: Sequence[PoolPlan]
) -> dict[str, ReservationFacts | None]:
    """Pool name -> its reservation as looked up (None: EC2 has none by that id in the stack's
    Region and account): every Capacity Block, and with `gpu-pool:region-lookups` every ODCR
    named by id too (its Region is judged: GP-REGION-05/07). Empty for an environment-agnostic
    stack (a lookup needs an account and region); without the reservations not looked up yet,
    each named by GP-TRAIN-20 (a block) or GP-REGION-08 (an ODCR)."""
    stack = Stack.of(scope)
    if Token.is_unresolved(stack.account) or Token.is_unresolved(stack.region):
        return {}
    odcrs = region_lookups(scope)
    found: dict[str, ReservationFacts | None] = {}
    for plan in plans:
        reservation = plan.settings.capacity_reservation
        if reservation is None or reservation.id is None:
            continue
        if not reservation.capacity_block and not odcrs:
            continue
        props = {
            "typeName": "AWS::EC2::CapacityReservation",
            "exactIdentifier": reservation.id,
            "propertiesToReturn": _PROPERTIES,
        }
        key = ContextProvider.get_key(scope, provider=_PROVIDER, props=props).key
        unchecked = (
            partial(not_looked_up, stack, plan.setting, reservation.id, key)
            if reservation.capacity_block
            else partial(_odcr_unchecked, stack, plan.setting, reservation.id)
        )
        answer = looked_up(
            scope,
            provider=_PROVIDER,
            props=props,
            dummy=[_PLACEHOLDER],
            # EC2 may have no such reservation here: the CLI caches the placeholder for that.
            must_exist=False,
            unchecked=unchecked,
        )
        if answer is None:
            continue
        (value,) = answer
        if value["AvailabilityZone"] == _PLACEHOLDER["AvailabilityZone"]:
            found[plan.name] = None  # cached: the lookup found no such reservation
        else:
            found[plan.name] = ReservationFacts(
                reservation.id,
                value["AvailabilityZone"],
                value["InstanceType"],
                int(value["TotalInstanceCount"]),
            )
    return found


def _odcr_unchecked(stack: Stack, setting: str, odcr: str, why: str) -> Finding:
    """GP-REGION-08 for an ODCR named by id (a region lookup: docs/region.md)."""
    command = (
        "aws ec2 describe-capacity-reservations --capacity-reservation-ids "
        f"{odcr} --region {stack.region}"
    )
    fact = f"that ODCR {odcr} is in {stack.region} for account {stack.account}"
    return unchecked_fact(stack, f"{setting}.capacity_reservation.id", fact, command, why)


def not_looked_up(stack: Stack, setting: str, block: str, key: str, why: str) -> Finding:
    """GP-TRAIN-20: a block not in cdk.context.json yet, why, and what to do about it
    (docs/training.md). A warning: the synth goes on with the pool unchecked against it, and
    gpu-pool replacements refuses the assembly."""
    entry = (
        f'"{key}": [{{"AvailabilityZone": "<its zone>", "InstanceType": "<its type>", '
        f'"TotalInstanceCount": <its count>, "Identifier": "{block}"}}]'
    )
    return warning(
        "GP-TRAIN-20",
        f"{setting}.capacity_reservation.id",
        f"Capacity Block {block} is not in cdk.context.json yet ({why.rstrip('.')}), so the "
        "pool's zone, type and max_size are not checked against it, and gpu-pool replacements "
        "(./dev deploy) refuses this assembly. The CDK CLI looks it up, which needs AWS "
        f"credentials for account {stack.account} (its bootstrap lookup role in {stack.region}): "
        "run one synth where they exist and commit cdk.context.json, and CI synthesizes without "
        "them. Or add the entry to cdk.context.json by hand, from aws ec2 "
        f"describe-capacity-reservations --capacity-reservation-ids {block}: {entry}",
    )
