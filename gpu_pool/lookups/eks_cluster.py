"""The answer to the app's existing-cluster lookup: what an EKS cluster is, for a stack that adds
pools to it (plan/existing_cluster.py reads the answer).

The CDK CLI asks the project's context provider plugin (cdk-plugin/index.js), which runs this
module (`python3 -m gpu_pool.lookups.eks_cluster`) with the lookup's props as JSON on stdin:
account, region, clusterName and lookupRoleArn. It prints the answer as JSON; on a failure one
line on stderr and exit 1, which the plugin hands to the CLI as the lookup's error. The calls
(each read-only, allowed by the bootstrap lookup role's ReadOnlyAccess):

- EKS DescribeCluster: version, resourcesVpcConfig (vpcId, subnetIds, clusterSecurityGroupId,
  endpointPublicAccess, endpointPrivateAccess), accessConfig.authenticationMode (EKS API
  Reference, "DescribeCluster"). No OIDC issuer: every controller gpu-pool installs gets its
  credentials through EKS Pod Identity;
- EKS ListAddons, then DescribeAddon of each: the add-ons installed, an add-on whose status is
  not CREATE_FAILED or DELETING (EKS API Reference, "Addon": status);
- EC2 DescribeSubnets and DescribeRouteTables of the cluster's subnets: a subnet whose route
  table (its own, else the VPC's main table) routes to an internet gateway is public (Amazon VPC
  user guide, "Subnet types"); the others, by zone, are where node groups go.

The credentials: gpu_pool/lookups/session.py.
"""

from __future__ import annotations

import sys
from typing import Any

from gpu_pool.lookups.session import LookupFailed, answer_lookup
from gpu_pool.plan.existing_cluster import ADDON_OWNER_TAG

# DescribeAddon statuses of an add-on that is not, or no longer, in the cluster.
_GONE = {"CREATE_FAILED", "DELETING"}


def describe_cluster(session: Any, name: str) -> dict[str, Any]:
    """The lookup's answer for cluster `name` (plan/existing_cluster.py ClusterFacts reads it)."""
    eks = session.client("eks")
    try:
        cluster = eks.describe_cluster(name=name)["cluster"]
    except eks.exceptions.ResourceNotFoundException:
        raise LookupFailed(
            f"EKS has no cluster {name} in {session.region_name}: check cluster.name and the "
            "stack's region"
        ) from None
    vpc = cluster["resourcesVpcConfig"]
    return {
        "name": name,
        "version": cluster["version"],
        "vpcId": vpc["vpcId"],
        "privateSubnets": _private_subnets(session.client("ec2"), vpc["vpcId"], vpc["subnetIds"]),
        "clusterSecurityGroupId": vpc.get("clusterSecurityGroupId", ""),
        "endpointPublicAccess": vpc["endpointPublicAccess"],
        "endpointPrivateAccess": vpc["endpointPrivateAccess"],
        # A cluster made before access entries answers no accessConfig: the aws-auth ConfigMap
        # is then its only mode.
        "authenticationMode": cluster.get("accessConfig", {}).get(
            "authenticationMode", "CONFIG_MAP"
        ),
        "addons": _addons(eks, name),
    }


def _addons(eks: Any, cluster: str) -> list[str]:
    """The cluster's own add-ons: installed (not failed or being deleted), and not made by a
    gpu-pool stack (ADDON_OWNER_TAG), whose add-ons the stack keeps as its own."""
    names = [
        n
        for page in eks.get_paginator("list_addons").paginate(clusterName=cluster)
        for n in page["addons"]
    ]
    found = [eks.describe_addon(clusterName=cluster, addonName=n)["addon"] for n in names]
    return sorted(
        a["addonName"]
        for a in found
        if a["status"] not in _GONE and ADDON_OWNER_TAG[0] not in a.get("tags", {})
    )


def _private_subnets(ec2: Any, vpc_id: str, subnet_ids: list[str]) -> dict[str, list[str]]:
    """The cluster's subnets without a route to an internet gateway, by zone, sorted."""
    subnets = [
        s
        for page in ec2.get_paginator("describe_subnets").paginate(SubnetIds=subnet_ids)
        for s in page["Subnets"]
    ]
    tables = [
        t
        for page in ec2.get_paginator("describe_route_tables").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}]
        )
        for t in page["RouteTables"]
    ]
    public_tables = {t["RouteTableId"] for t in tables if _to_internet_gateway(t)}
    own_table = {
        a["SubnetId"]: t["RouteTableId"]
        for t in tables
        for a in t.get("Associations", [])
        if a.get("SubnetId")
    }
    main = next(
        (t["RouteTableId"] for t in tables for a in t.get("Associations", []) if a.get("Main")),
        None,
    )
    by_zone: dict[str, list[str]] = {}
    for subnet in subnets:
        if own_table.get(subnet["SubnetId"], main) not in public_tables:
            by_zone.setdefault(subnet["AvailabilityZone"], []).append(subnet["SubnetId"])
    return {zone: sorted(ids) for zone, ids in sorted(by_zone.items())}


def _to_internet_gateway(table: dict[str, Any]) -> bool:
    return any(r.get("GatewayId", "").startswith("igw-") for r in table.get("Routes", []))


def main() -> int:
    return answer_lookup(
        lambda props: f"the EKS cluster {props['clusterName']} of {props['region']}",
        lambda session, props: describe_cluster(session, props["clusterName"]),
    )


if __name__ == "__main__":
    sys.exit(main())
