"""What the stack's Region offers (the cached lookups, as RegionFacts) against the pools: instance
type offerings per zone, published AMI types, reserved capacity of the Region. Each rule with its
exact message; a fact not looked up judges nothing."""

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import plan_pools
from gpu_pool.plan.region import RegionFacts, ami_parameter, pool_ami_types
from gpu_pool.settings import load_settings
from tests.support.rules import documented

ACCOUNT, REGION = "123456789012", "us-east-1"
# The region's six zones, as the cached zone lookup lists them: the cluster takes the first three.
KNOWN = [f"{REGION}{z}" for z in "abcdef"]
CACHED = "EC2 DescribeInstanceTypeOfferings, cached in cdk.context.json"
AL2023_X86 = "AL2023_x86_64_NVIDIA"
BOTTLEROCKET_X86 = "BOTTLEROCKET_x86_64_NVIDIA"


def _found(pool, facts, *, app=None, reservations=None, known=KNOWN):
    settings = load_settings(
        {"account": ACCOUNT, "region": REGION, **(app or {}), "pools": {"gpu": pool}}, None
    )
    found = check_settings(
        settings,
        plan_pools(settings),
        known_zones=known,
        reservations=reservations,
        region_facts=facts,
    )
    return [("E" if f.error else "W", str(f)) for f in documented(found.all()) if f.error]


def _offered(zones_by_type):
    return RegionFacts(REGION, offerings={t: tuple(z) for t, z in zones_by_type.items()})


POOL = {"instance_types": ["p5.48xlarge"], "max_size": 2}


def test_a_type_offered_in_the_pools_zones_is_no_finding():
    facts = _offered({"p5.48xlarge": ["us-east-1a", "us-east-1b"]})
    assert _found({**POOL, "zones": ["us-east-1a", "us-east-1b"]}, facts) == []


def test_a_type_the_region_does_not_offer_is_an_error():
    assert _found(POOL, _offered({"p5.48xlarge": []})) == [
        (
            "E",
            f"pools.gpu.instance_types: 'p5.48xlarge' is not offered in us-east-1 ({CACHED}): "
            "choose a type that is, or deploy the pool to a Region that offers it",
        )
    ]


def test_a_pool_zone_that_lacks_the_type_is_named_with_the_zones_that_have_it():
    facts = _offered({"p5.48xlarge": ["us-east-1a", "us-east-1d"]})
    assert _found({**POOL, "zones": ["us-east-1a", "us-east-1b"]}, facts) == [
        (
            "E",
            f"pools.gpu.zones: us-east-1b does not offer 'p5.48xlarge' ({CACHED}); the zones of "
            "us-east-1 that do: us-east-1a, us-east-1d: choose among them",
        )
    ]


def test_a_karpenter_pool_fails_only_when_none_of_its_zones_offers_the_type():
    """Karpenter launches only where a type is offered; a node group per zone never launches in
    a zone without it."""
    pool = {**POOL, "provisioner": "karpenter", "zones": ["us-east-1a", "us-east-1b"]}
    assert _found(pool, _offered({"p5.48xlarge": ["us-east-1a"]})) == []
    assert _found(pool, _offered({"p5.48xlarge": ["us-east-1d"]})) == [
        (
            "E",
            f"pools.gpu.zones: us-east-1a, us-east-1b do not offer 'p5.48xlarge' ({CACHED}); "
            "the zones of us-east-1 that do: us-east-1d: choose among them",
        )
    ]


def test_a_type_in_none_of_the_clusters_zones_names_the_zones_that_offer_it():
    facts = _offered({"p5.48xlarge": ["us-east-1d", "us-east-1f"]})
    assert _found(POOL, facts) == [
        (
            "E",
            "pools.gpu.instance_types: 'p5.48xlarge' is offered in none of the cluster's zones "
            "(us-east-1a, us-east-1b, us-east-1c); us-east-1 offers it in us-east-1d, "
            f"us-east-1f ({CACHED}): choose another type, or give the cluster one of those zones "
            "(cluster.zones, before its first deploy)",
        )
    ]
    # Some of them is not enough for a node group across the cluster's zones: EKS refuses a
    # node group with a subnet in a zone that lacks its type (eksctl-io/eksctl#6461), so the
    # pool's zones must name those that have it. Karpenter launches where it is offered.
    assert _found(POOL, _offered({"p5.48xlarge": ["us-east-1c", "us-east-1d"]})) == [
        (
            "E",
            "pools.gpu.zones: empty, so the pool's node group spans every zone of the cluster, "
            f"and us-east-1a, us-east-1b do not offer 'p5.48xlarge' ({CACHED}), which EKS "
            "refuses: set zones to those of the cluster that do: us-east-1c",
        )
    ]
    assert (
        _found({**POOL, "zones": ["us-east-1c"]}, _offered({"p5.48xlarge": ["us-east-1c"]})) == []
    )
    karpenter = {**POOL, "provisioner": "karpenter"}
    assert _found(karpenter, _offered({"p5.48xlarge": ["us-east-1c", "us-east-1d"]})) == []
    # The cluster's own zones, when it names them.
    cluster = {"cluster": {"zones": ["us-east-1d", "us-east-1f"]}}
    assert _found(POOL, facts, app=cluster) == []


def test_an_existing_clusters_zones_are_its_subnets_zones():
    existing = {
        "kubectl_provider_service_token": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:kubectl",
        "kubectl_provider_role_arn": f"arn:aws:iam::{ACCOUNT}:role/kubectl-handler",
        "subnets_by_zone": {"us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"]},
    }
    app = {"cluster": {"name": "platform", "existing": existing}}
    found = _found(POOL, _offered({"p5.48xlarge": ["us-east-1b"]}), app=app)
    assert found == [
        (
            "E",
            "pools.gpu.instance_types: 'p5.48xlarge' is offered in none of the cluster's zones "
            f"(us-east-1a); us-east-1 offers it in us-east-1b ({CACHED}): choose another type, "
            "or give the cluster subnets in one of those zones "
            "(cluster.existing.subnets_by_zone)",
        )
    ]


EXISTING_TWO_ZONES = {
    "cluster": {
        "name": "platform",
        "existing": {
            "kubectl_provider_service_token": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:k",
            "kubectl_provider_role_arn": f"arn:aws:iam::{ACCOUNT}:role/kubectl-handler",
            "subnets_by_zone": {
                "us-east-1a": ["subnet-0aaaaaaaaaaaaaaaa"],
                "us-east-1b": ["subnet-0bbbbbbbbbbbbbbbb"],
            },
        },
    }
}


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        # A zone of another Region: said so, not "does not offer the type".
        ("us-west-2a", "pools.gpu.zones: 'us-west-2a' is not in region us-east-1"),
        # A zone the cluster has no subnet in (or that does not exist): its subnets are missing.
        (
            "us-east-1z",
            "pools.gpu.zones: us-east-1z not in cluster.existing.subnets_by_zone (us-east-1a, "
            "us-east-1b): add its subnets or drop the zone",
        ),
    ],
    ids=["other-region", "no-subnet-there"],
)
def test_an_existing_clusters_pool_zone_is_judged_by_what_is_wrong_with_it(zone, expected):
    offered = _offered({"p5.48xlarge": ["us-east-1b", "us-east-1c"]})
    found = _found({**POOL, "zones": [zone]}, offered, app=EXISTING_TWO_ZONES)
    assert found == [("E", expected)]


def test_an_existing_clusters_advice_names_only_zones_it_has_subnets_in():
    pool = {**POOL, "zones": ["us-east-1a"]}
    offered = _offered({"p5.48xlarge": ["us-east-1b", "us-east-1c"]})
    found = _found(pool, offered, app=EXISTING_TWO_ZONES)
    assert found == [
        (
            "E",
            f"pools.gpu.zones: us-east-1a does not offer 'p5.48xlarge' ({CACHED}); the cluster's "
            "zones that do: us-east-1b: choose among them",
        )
    ]
    none = _found(pool, _offered({"p5.48xlarge": ["us-east-1c"]}), app=EXISTING_TWO_ZONES)
    assert none == [
        (
            "E",
            f"pools.gpu.zones: us-east-1a does not offer 'p5.48xlarge' ({CACHED}); none of the "
            "cluster's zones do; us-east-1 offers it in us-east-1c: give the cluster subnets "
            "there (cluster.existing.subnets_by_zone), or choose another type",
        )
    ]


def test_nothing_looked_up_judges_nothing():
    """Not cached yet (the CLI's first pass), or an environment-agnostic stack: no facts."""
    assert _found(POOL, RegionFacts(REGION)) == []
    assert _found(POOL, None) == []
    # The zones not looked up either: the cluster's zones are unknown, the pool's still judged.
    facts = _offered({"p5.48xlarge": ["us-east-1d"]})
    assert _found(POOL, facts, known=[]) == []


@pytest.mark.parametrize(
    ("pool", "published", "expected"),
    [
        ({}, {AL2023_X86: True, BOTTLEROCKET_X86: True}, []),
        (
            {},
            {AL2023_X86: False, BOTTLEROCKET_X86: True},
            "pools.gpu.ami_family: AL2023_x86_64_NVIDIA is not published in us-east-1 for "
            "Kubernetes 1.35 (no SSM parameter /aws/service/eks/optimized-ami/1.35/"
            "amazon-linux-2023/x86_64/nvidia/recommended/image_id, cached in cdk.context.json: "
            "`cdk context --reset` its entry to look again): "
            "set ami_family BOTTLEROCKET (BOTTLEROCKET_x86_64_NVIDIA), which is, or deploy the pool to "
            "another Region",
        ),
        (
            {"ami_family": "BOTTLEROCKET", "gpu_software": "none"},
            {AL2023_X86: False, BOTTLEROCKET_X86: False},
            "pools.gpu.ami_family: BOTTLEROCKET_x86_64_NVIDIA is not published in us-east-1 for "
            "Kubernetes 1.35 (no SSM parameter /aws/service/bottlerocket/aws-k8s-1.35-nvidia/"
            "x86_64/latest/image_id, cached in cdk.context.json: `cdk context --reset` its entry "
            "to look again): deploy the pool to a Region that publishes it; no NVIDIA AMI looked "
            "up for Kubernetes 1.35 is published in us-east-1: if the minor is new, it may be "
            "published nowhere yet, so set an older cluster.kubernetes_version until it is",
        ),
        (
            {"ami_type": AL2023_X86},
            {AL2023_X86: False},
            "pools.gpu.ami_type: AL2023_x86_64_NVIDIA is not published in us-east-1 for "
            "Kubernetes 1.35 (no SSM parameter /aws/service/eks/optimized-ami/1.35/"
            "amazon-linux-2023/x86_64/nvidia/recommended/image_id, cached in cdk.context.json: "
            "`cdk context --reset` its entry to look again): "
            "deploy the pool to a Region that publishes it; no NVIDIA AMI looked up for "
            "Kubernetes 1.35 is published in us-east-1: if the minor is new, it may be published "
            "nowhere yet, so set an older cluster.kubernetes_version until it is",
        ),
        (
            # Another architecture's AMI of the minor is published here: a Region gap.
            {"ami_type": AL2023_X86},
            {AL2023_X86: False, "AL2023_ARM_64_NVIDIA": True},
            "pools.gpu.ami_type: AL2023_x86_64_NVIDIA is not published in us-east-1 for "
            "Kubernetes 1.35 (no SSM parameter /aws/service/eks/optimized-ami/1.35/"
            "amazon-linux-2023/x86_64/nvidia/recommended/image_id, cached in cdk.context.json: "
            "`cdk context --reset` its entry to look again): "
            "deploy the pool to a Region that publishes it",
        ),
        (
            {"ami_type": AL2023_X86},
            {AL2023_X86: False, BOTTLEROCKET_X86: True},
            "pools.gpu.ami_type: AL2023_x86_64_NVIDIA is not published in us-east-1 for "
            "Kubernetes 1.35 (no SSM parameter /aws/service/eks/optimized-ami/1.35/"
            "amazon-linux-2023/x86_64/nvidia/recommended/image_id, cached in cdk.context.json: "
            "`cdk context --reset` its entry to look again): "
            "set ami_family BOTTLEROCKET with ami_type BOTTLEROCKET_x86_64_NVIDIA, which is, or "
            "deploy the pool to another Region",
        ),
        ({"provisioner": "karpenter"}, {AL2023_X86: True}, []),
        (
            {"provisioner": "karpenter"},
            {AL2023_X86: False},
            "pools.gpu.ami_family: AL2023_x86_64_NVIDIA is not published in us-east-1 for "
            "Kubernetes 1.35 (no SSM parameter /aws/service/eks/optimized-ami/1.35/"
            "amazon-linux-2023/x86_64/nvidia/recommended/image_id, cached in cdk.context.json: "
            "`cdk context --reset` its entry to look again): "
            "deploy the pool to a Region that publishes it; no NVIDIA AMI looked up for "
            "Kubernetes 1.35 is published in us-east-1: if the minor is new, it may be published "
            "nowhere yet, so set an older cluster.kubernetes_version until it is",
        ),
        # Auto Mode: EKS chooses the image.
        ({"provisioner": "auto-mode", "ami_family": "BOTTLEROCKET"}, {BOTTLEROCKET_X86: False}, []),
    ],
    ids=[
        "published",
        "al2023-missing",
        "bottlerocket-missing",
        "ami-type-missing",
        "ami-type-other-architecture",
        "ami-type-other-family",
        "karpenter-published",
        "karpenter-missing",
        "auto-mode",
    ],
)
def test_an_ami_type_the_region_does_not_publish_is_an_error(pool, published, expected):
    facts = RegionFacts(REGION, ami_types=published)
    app = {"cluster": {"kubernetes_version": "1.35"}}
    assert _found({"instance_types": ["g6.xlarge"], **pool}, facts, app=app) == (
        [("E", expected)] if expected else []
    )


BLOCK = "cr-0123456789abcdef0"
BLOCK_POOL = {
    "instance_types": ["p5.48xlarge"],
    "zones": ["us-east-1a"],
    "max_size": 2,
    "capacity_reservation": {"type": "capacity-block", "id": BLOCK},
}


def test_a_block_of_another_region_is_that_error_alone():
    """Its zone and type say nothing about this Region: no GP-TRAIN-15 ("list [eu-west-1a]")
    nor GP-APP-20 beside it."""
    facts = ReservationFacts(BLOCK, "eu-west-1a", "p5.48xlarge", 2)
    assert _found(BLOCK_POOL, None, reservations={"gpu": facts}) == [
        (
            "E",
            f"pools.gpu.capacity_reservation.id: {BLOCK} is in eu-west-1a (eu-west-1, "
            "cdk.context.json), the stack in us-east-1: a launch uses only reservations of its "
            "own Region; use a reservation in us-east-1, or deploy the pool's cluster to "
            "eu-west-1",
        )
    ]
    inside = ReservationFacts(BLOCK, "us-east-1a", "p5.48xlarge", 2)
    assert _found(BLOCK_POOL, None, reservations={"gpu": inside}) == []


GROUP = "arn:aws:resource-groups:{region}:{account}:group/p5-reservations"


@pytest.mark.parametrize(
    ("region", "account", "app", "wrong"),
    [
        ("us-east-1", ACCOUNT, {}, None),
        ("us-west-2", ACCOUNT, {}, "Region us-west-2, the stack's us-east-1"),
        ("us-east-1", "210987654321", {}, f"account 210987654321, the stack's {ACCOUNT}"),
        (
            "us-west-2",
            "210987654321",
            {},
            f"Region us-west-2, the stack's us-east-1; account 210987654321, the stack's {ACCOUNT}",
        ),
    ],
    ids=["same", "other-region", "other-account", "both"],
)
def test_a_reservation_group_of_another_region_or_account_is_an_error(region, account, app, wrong):
    arn = GROUP.format(region=region, account=account)
    pool = {**POOL, "capacity_reservation": {"type": "odcr", "resource_group_arn": arn}}
    expected = (
        [
            (
                "E",
                f"pools.gpu.capacity_reservation.resource_group_arn: the group is in {wrong}: a "
                "group holds reservations of its own Region, and reservations shared from "
                "another account are grouped in the account that launches: target a group of "
                f"account {ACCOUNT} in us-east-1",
            )
        ]
        if wrong
        else []
    )
    assert _found(pool, None, app=app) == expected


def test_a_group_is_judged_against_what_the_stack_knows():
    """An environment-agnostic stack: neither; a Region alone: the Region."""
    arn = GROUP.format(region="us-west-2", account="210987654321")
    pool = {**POOL, "capacity_reservation": {"type": "odcr", "resource_group_arn": arn}}
    agnostic = load_settings({"pools": {"gpu": pool}}, None)
    assert [f for f in check_settings(agnostic, plan_pools(agnostic)).all() if f.error] == []
    region_only = load_settings({"region": REGION, "pools": {"gpu": pool}}, None)
    found = [f for f in check_settings(region_only, plan_pools(region_only)).all() if f.error]
    assert [str(f) for f in documented(found)] == [
        "pools.gpu.capacity_reservation.resource_group_arn: the group is in Region us-west-2, "
        "the stack's us-east-1: a group holds reservations of its own Region, and reservations "
        "shared from another account are grouped in the account that launches: target a group "
        "of us-east-1"
    ]


@pytest.mark.parametrize(
    ("ami_type", "parameter"),
    [
        (
            "AL2023_x86_64_NVIDIA",
            "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/recommended/"
            "image_id",
        ),
        (
            "AL2023_ARM_64_NVIDIA",
            "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/nvidia/recommended/"
            "image_id",
        ),
        (
            "BOTTLEROCKET_x86_64_NVIDIA",
            "/aws/service/bottlerocket/aws-k8s-1.36-nvidia/x86_64/latest/image_id",
        ),
        (
            "BOTTLEROCKET_ARM_64_NVIDIA",
            "/aws/service/bottlerocket/aws-k8s-1.36-nvidia/arm64/latest/image_id",
        ),
    ],
)
def test_each_nvidia_ami_type_is_looked_up_by_its_documented_parameter(ami_type, parameter):
    """EKS user guide, "Retrieve recommended Amazon Linux AMI IDs" (amazon-linux-2023/<arch>/
    nvidia) and "Retrieve recommended Bottlerocket AMI IDs" (aws-k8s-<minor>-nvidia/<arch>)."""
    assert ami_parameter(ami_type, "1.36") == parameter


def test_an_ami_type_without_an_nvidia_parameter_is_refused():
    with pytest.raises(ValueError, match="not an EKS NVIDIA AMI type: AL2023_x86_64_STANDARD"):
        ami_parameter("AL2023_x86_64_STANDARD", "1.36")


def test_a_g5g_pool_boots_the_arm_ami_type():
    """The AMI type the lookups ask about is the pool's own, per architecture."""
    settings = load_settings({"pools": {"gpu": {"instance_types": ["g5g.xlarge"]}}}, None)
    (plan,) = plan_pools(settings)
    assert pool_ami_types(plan) == ["AL2023_ARM_64_NVIDIA"]


def test_a_block_ec2_does_not_have_in_the_stacks_region_is_an_error():
    """The lookup found no such block (bought in another Region, or a mistyped id): the CLI
    cached the placeholder, which the stack reads as None."""
    assert _found(BLOCK_POOL, None, reservations={"gpu": None}) == [
        (
            "E",
            f"pools.gpu.capacity_reservation.id: EC2 has no reservation {BLOCK} in us-east-1 for "
            f"account {ACCOUNT} (Cloud Control GetResource, cached in cdk.context.json): a launch "
            "uses only reservations of its own Region and account; name a block of account "
            f"{ACCOUNT} in us-east-1, or deploy the pool's cluster to the Region the block was "
            "bought in (the answer is cached: `cdk context --reset` its entry if the block "
            "appears here later)",
        )
    ]
