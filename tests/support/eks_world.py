"""An existing EKS cluster in moto (EKS and EC2 on 127.0.0.1, the aws_api fixture), looked up as
the project's CDK CLI plugin does (gpu_pool/lookups/eks_cluster.py), for the #47 tests.

What moto (5.2.5) leaves out is served as EKS documents it: DescribeCluster's accessConfig,
resourcesVpcConfig.vpcId and clusterSecurityGroupId (EKS API Reference, "DescribeCluster",
VpcConfigResponse: EKS answers the VPC of the cluster's subnets and the security group it
created; moto echoes the request), and ListAddons/DescribeAddon, which moto does not serve at
all (EKS API Reference, "ListAddons", "DescribeAddon": an add-on not in the cluster is
ResourceNotFoundException).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from gpu_pool.lookups.eks_cluster import describe_cluster
from tests.support.looked_up import ACCOUNT, REGION

SECURITY_GROUP = "sg-0123456789abcdef0"


@contextmanager
def in_moto(endpoint: str) -> Iterator[None]:
    """boto3 pointed at moto's server at `endpoint`, with fake credentials, for a module
    fixture (the aws_api fixture is a test's)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }.items():
            patch.setenv(name, value)
        yield


class EksAsDocumented:
    """What moto leaves out of EKS, as the API Reference has it, for one session's clients."""

    def __init__(
        self,
        session: boto3.Session,
        vpc: str,
        mode: str | None,
        addons: dict[str, str],
        public_cidrs: list[str] | None = None,
    ) -> None:
        """`mode`: accessConfig.authenticationMode, None for a cluster made before access
        entries (DescribeCluster then answers no accessConfig). `addons`: each add-on's status,
        then, for one a gpu-pool stack created, a space and the value of its
        gpu-pool.io/created-by tag. `public_cidrs`: publicAccessCidrs, which EKS answers
        [0.0.0.0/0] for when the cluster was created without them."""
        self.vpc, self.mode, self.addons = vpc, mode, addons
        self.public_cidrs = public_cidrs or ["0.0.0.0/0"]
        session.events.register("after-call.eks.DescribeCluster", self._describe_cluster)
        session.events.register("before-call.eks.ListAddons", self._list_addons)
        session.events.register("before-call.eks.DescribeAddon", self._describe_addon)

    def _describe_cluster(self, parsed, **_):
        if self.mode is not None:
            parsed["cluster"]["accessConfig"] = {"authenticationMode": self.mode}
        config = parsed["cluster"]["resourcesVpcConfig"]
        config.update(
            vpcId=self.vpc,
            clusterSecurityGroupId=SECURITY_GROUP,
            publicAccessCidrs=self.public_cidrs,
        )

    def _list_addons(self, params, **_):
        return _ok({"addons": sorted(self.addons)})

    def _describe_addon(self, params, **_):
        name = params["url_path"].rsplit("/", 1)[-1]
        if name not in self.addons:
            raise ClientError(
                {"Error": {"Code": "ResourceNotFoundException", "Message": name}}, "DescribeAddon"
            )
        status, _, owner = self.addons[name].partition(" ")
        tags = {"gpu-pool.io/created-by": owner} if owner else {}
        return _ok({"addon": {"addonName": name, "status": status, "tags": tags}})


def _ok(parsed):
    return AWSResponse("https://eks", 200, {}, None), parsed


# How each private subnet's traffic leaves the VPC (network's `egress`): through the NAT gateway
# in the public subnet, or not at all (no default route: an isolated subnet).
NAT, NONE = "nat", "none"


def network(ec2, *, egress_a=NAT, main_table=NAT):
    """A VPC as eksctl makes one: a public subnet (us-east-1c) routing to an internet gateway
    and holding the NAT gateway; a private subnet in us-east-1a on a route table of its own,
    whose default route is `egress_a`; one in us-east-1b on the VPC's main route table, whose
    default route is `main_table` (NAT, NONE, or "igw": the main table routes to the internet,
    which makes every subnet without a table of its own public)."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = {
        zone: ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"][
            "SubnetId"
        ]
        for zone, cidr in (
            (f"{REGION}a", "10.0.1.0/24"),
            (f"{REGION}b", "10.0.2.0/24"),
            (f"{REGION}c", "10.0.3.0/24"),
        )
    }
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    public = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
    ec2.associate_route_table(RouteTableId=public, SubnetId=subnet[f"{REGION}c"])
    address = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=subnet[f"{REGION}c"], AllocationId=address)
    nat_id = nat["NatGateway"]["NatGatewayId"]
    private = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.associate_route_table(RouteTableId=private, SubnetId=subnet[f"{REGION}a"])
    (main,) = ec2.describe_route_tables(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc]},
            {"Name": "association.main", "Values": ["true"]},
        ]
    )["RouteTables"]
    for table, egress in ((private, egress_a), (main["RouteTableId"], main_table)):
        if egress == NAT:
            ec2.create_route(
                RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat_id
            )
        elif egress == "igw":
            ec2.create_route(
                RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway
            )
    return vpc, subnet


def looked_up_cluster(
    name,
    *,
    mode="API_AND_CONFIG_MAP",
    addons=None,
    version="1.33",
    public=True,
    egress_a=NAT,
    main_table=NAT,
    public_cidrs=None,
):
    """A cluster of that name in moto, and the lookup's answer for it."""
    session = boto3.Session(region_name=REGION)
    vpc, subnet = network(session.client("ec2"), egress_a=egress_a, main_table=main_table)
    eks = session.client("eks")
    # A module fixture that xdist's work stealing sets up twice in one worker meets its own
    # cluster in that worker's moto: the world is made anew.
    if name in eks.list_clusters()["clusters"]:
        eks.delete_cluster(name=name)
    eks.create_cluster(
        name=name,
        version=version,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-cluster",
        resourcesVpcConfig={
            "subnetIds": sorted(subnet.values()),
            "endpointPublicAccess": public,
            "endpointPrivateAccess": True,
        },
    )
    EksAsDocumented(session, vpc, mode, addons or {"vpc-cni": "ACTIVE"}, public_cidrs)
    return vpc, subnet, describe_cluster(session, name)
