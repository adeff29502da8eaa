"""The answer to the app's existing-cluster lookup: what an EKS cluster is, for a stack that adds
pools to it (plan/existing_cluster.py reads the answer).

The CDK CLI asks the project's context provider plugin (cdk-plugin/index.js), which runs this
module (`python3 -m gpu_pool.lookups.eks_cluster`) with the lookup's props as JSON on stdin:
account, region, clusterName and lookupRoleArn. It prints the answer as JSON; on a failure one
line on stderr and exit 1, which the plugin hands to the CLI as the lookup's error. The calls
(each read-only, allowed by the bootstrap lookup role's ReadOnlyAccess):

- EKS DescribeCluster: version, resourcesVpcConfig (vpcId, subnetIds, clusterSecurityGroupId,
  endpointPublicAccess, endpointPrivateAccess, publicAccessCidrs), computeConfig.enabled (Auto
  Mode), accessConfig.authenticationMode (EKS API Reference, "DescribeCluster"). No OIDC issuer:
  every controller gpu-pool installs gets its credentials through EKS Pod Identity;
- EKS ListAddons, then DescribeAddon of each: the add-ons that exist, every status but DELETING
  (EKS API Reference, "Addon": status; one in CREATE_FAILED still exists, and creating it again
  is refused), each with the value of its gpu-pool owner tag where it has one;
- EC2 DescribeSubnets and DescribeRouteTables of the cluster's subnets, each subnet judged by its
  route table (its own, else the VPC's main table; Amazon VPC user guide, "Subnet types"): a
  route to an internet gateway makes it public; a default route (0.0.0.0/0) through anything
  else (a NAT gateway or instance, a transit gateway, a peering, a VPN) makes it private; no
  default route at all makes it isolated: only VPC endpoints reach AWS from there. The private
  and isolated ones, by zone, are where node groups may go.

The credentials: gpu_pool/lookups/session.py.
"""

from __future__ import annotations

import sys
from typing import Any

from gpu_pool.lookups.session import LookupFailed, answer_lookup
from gpu_pool.plan.existing_cluster import ADDON_OWNER_TAG, OPEN_TO_ALL

# DescribeAddon status of an add-on that is on its way out of the cluster.
_GONE = {"DELETING"}


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
    private, isolated = _node_subnets(session.client("ec2"), vpc["vpcId"], vpc["subnetIds"])
    addons, owners = _addons(eks, name)
    return {
        # The shape is documented in docs/existing-clusters.md ("The cached answer").
        "name": name,
        "version": cluster["version"],
        "vpcId": vpc["vpcId"],
        "privateSubnets": private,
        "isolatedSubnets": isolated,
        "clusterSecurityGroupId": vpc.get("clusterSecurityGroupId", ""),
        "endpointPublicAccess": vpc["endpointPublicAccess"],
        "endpointPrivateAccess": vpc["endpointPrivateAccess"],
        # EKS answers [0.0.0.0/0] where the public endpoint is not limited.
        "publicAccessCidrs": vpc.get("publicAccessCidrs", [OPEN_TO_ALL]),
        # A cluster made before access entries answers no accessConfig: the aws-auth ConfigMap
        # is then its only mode.
        "authenticationMode": cluster.get("accessConfig", {}).get(
            "authenticationMode", "CONFIG_MAP"
        ),
        # Auto Mode: computeConfig.enabled (absent on a cluster that never had it).
        "autoMode": bool(cluster.get("computeConfig", {}).get("enabled", False)),
        "addons": addons,
        "addonOwners": owners,
    }


def _addons(eks: Any, cluster: str) -> tuple[list[str], dict[str, str]]:
    """The add-ons in the cluster (every status but DELETING), sorted, and, of those a gpu-pool
    stack created, the stack that did (its ADDON_OWNER_TAG value): the stack that reads the
    answer keeps its own add-ons, and takes another stack's for the cluster's."""
    names = [
        n
        for page in eks.get_paginator("list_addons").paginate(clusterName=cluster)
        for n in page["addons"]
    ]
    found = [eks.describe_addon(clusterName=cluster, addonName=n)["addon"] for n in names]
    present = [a for a in found if a["status"] not in _GONE]
    owners = {
        a["addonName"]: a["tags"][ADDON_OWNER_TAG]
        for a in present
        if ADDON_OWNER_TAG in a.get("tags", {})
    }
    return sorted(a["addonName"] for a in present), dict(sorted(owners.items()))


def _node_subnets(
    ec2: Any, vpc_id: str, subnet_ids: list[str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The cluster's subnets without a route to an internet gateway, by zone, sorted; and of
    those, the isolated ones (no default route at all), by zone."""
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
    isolated_tables = {t["RouteTableId"] for t in tables if not _default_route(t)}
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
    private: dict[str, list[str]] = {}
    isolated: dict[str, list[str]] = {}
    for subnet in subnets:
        table = own_table.get(subnet["SubnetId"], main)
        if table in public_tables:
            continue
        zone, subnet_id = subnet["AvailabilityZone"], subnet["SubnetId"]
        private.setdefault(zone, []).append(subnet_id)
        if table in isolated_tables:
            isolated.setdefault(zone, []).append(subnet_id)
    return _sorted(private), _sorted(isolated)


def _sorted(by_zone: dict[str, list[str]]) -> dict[str, list[str]]:
    return {zone: sorted(ids) for zone, ids in sorted(by_zone.items())}


def _active(table: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's routes that carry traffic: a route whose target is gone (a deleted NAT
    gateway) is a blackhole (EC2 API Reference, "Route": State)."""
    return [r for r in table.get("Routes", []) if r.get("State", "active") == "active"]


def _to_internet_gateway(table: dict[str, Any]) -> bool:
    return any(r.get("GatewayId", "").startswith("igw-") for r in _active(table))


def _default_route(table: dict[str, Any]) -> bool:
    """Whether the table routes 0.0.0.0/0 anywhere: a NAT gateway (NatGatewayId), a NAT
    instance (InstanceId, NetworkInterfaceId), a transit gateway, a peering, a virtual private
    gateway, an internet gateway. Without one, only the VPC and its endpoints are reachable."""
    return any(r.get("DestinationCidrBlock") == OPEN_TO_ALL for r in _active(table))


def main() -> int:
    return answer_lookup(
        lambda props: f"the EKS cluster {props['clusterName']} of {props['region']}",
        lambda session, props: describe_cluster(session, props["clusterName"]),
    )


if __name__ == "__main__":
    sys.exit(main())
