"""Training pools (#22): reserved capacity and EFA, on managed node groups and on Karpenter.

One app (tests/support/settings.py TRAINING): `train`, a Capacity Block of p5.48xlarge with
EFA; `train-od`, its on-demand fallback for the same workload; `odcr`, node groups in an ODCR;
`kodcr`, a Karpenter pool in an ODCR with EFA that falls back to on-demand.
"""

import json
import re

import pytest

from gpu_pool.cdk.nodegroups.asg_tags import RESOURCE_TYPE as ASG_TAGS
from gpu_pool.cdk.nodegroups.scaling import RESOURCE_TYPE as SCALING
from gpu_pool.model.scheduling import pod_fits_node
from tests.support.ca_template import node_template, pod_fits_template
from tests.support.cfn import (
    autoscaler_priorities,
    helm_values,
    node_of,
    render,
    resources,
    unvalidated_app,
)
from tests.support.paths import ROOT
from tests.support.settings import CAPACITY_BLOCK_ID, ODCR_ID, ODCR_PLACEMENT_GROUP, TRAINING

NODEGROUP = "AWS::EKS::Nodegroup"
HELM = "Custom::AWSCDK-EKS-HelmChart"


def _prefix(pool):
    return "GpuPool" + "".join(p.capitalize() for p in pool.split("-"))


def _owner(logical_id):
    """The pool whose construct id is the longest prefix of `logical_id` (GpuPoolTrainOd... is
    train-od's, not train's)."""
    pools = [p for p in TRAINING["pools"] if logical_id.startswith(_prefix(p))]
    return max(pools, key=len, default=None)


def pool_logical_id(template, type_name, pool):
    """The logical id of the one resource of `type_name` in pool `pool`'s construct."""
    (match,) = [k for k in resources(template, type_name) if _owner(k) == pool]
    return match


def pool_resource(template, type_name, pool):
    return resources(template, type_name)[pool_logical_id(template, type_name, pool)]


def nodegroup(template, pool):
    return pool_resource(template, NODEGROUP, pool)["Properties"]


def launch_template_data(template, pool):
    return pool_resource(template, "AWS::EC2::LaunchTemplate", pool)["Properties"][
        "LaunchTemplateData"
    ]


def ref_id(value):
    """The logical id a Ref or GetAtt names."""
    return value.get("Ref") or value["Fn::GetAtt"][0]


def test_odcr_pool_launches_into_its_reservation_on_demand(training_template):
    data = launch_template_data(training_template, "odcr")
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": ODCR_ID}
    }
    assert "InstanceMarketOptions" not in data
    assert "InstanceType" not in data
    props = nodegroup(training_template, "odcr")
    assert props["CapacityType"] == "ON_DEMAND"
    assert props["InstanceTypes"] == ["g6e.12xlarge"]


def test_capacity_block_pool_names_its_one_type_in_the_launch_template(training_template):
    data = launch_template_data(training_template, "train")
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": CAPACITY_BLOCK_ID}
    }
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["InstanceType"] == "p5.48xlarge"
    props = nodegroup(training_template, "train")
    assert props["CapacityType"] == "CAPACITY_BLOCK"
    # The API refuses a type in both places: the block's one type is the template's.
    assert "InstanceTypes" not in props


def test_capacity_block_pool_uses_its_zones_subnets_and_never_pushes_a_size(training_template):
    props = nodegroup(training_template, "train")
    zone_subnets = {
        k
        for k, r in resources(training_template, "AWS::EC2::Subnet").items()
        if r["Properties"].get("AvailabilityZone") == "us-east-1a" and "Private" in k
    }
    assert {ref_id(s) for s in props["Subnets"]} <= zone_subnets
    assert props["Subnets"]
    # The template's scaling config is the constant one; the day-2 resource applies the
    # settings: min 0, and a desired size only on creation, which is 0.
    assert props["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 0, "MaxSize": 8}
    (scaling,) = [
        r["Properties"]
        for r in resources(training_template, SCALING).values()
        if render(r["Properties"]["NodegroupName"]).startswith("<GetAtt:GpuPoolTrainP5")
    ]
    assert (scaling["MinSize"], scaling["DesiredSizeOnCreate"]) == (0, 0)


def test_efa_p5_pool_has_32_interfaces_one_per_network_card(training_template):
    data = launch_template_data(training_template, "train")
    interfaces = data["NetworkInterfaces"]
    assert len(interfaces) == 32
    assert [i["NetworkCardIndex"] for i in interfaces] == list(range(32))
    assert [i["DeviceIndex"] for i in interfaces] == [0] + [1] * 31
    assert {i["InterfaceType"] for i in interfaces} == {"efa"}
    # Security groups sit on the interfaces: a template with NetworkInterfaces may not also
    # set SecurityGroupIds, and a managed node group's template no SubnetId.
    assert "SecurityGroupIds" not in data
    assert not any("SubnetId" in i for i in interfaces)
    groups = {json.dumps(g, sort_keys=True) for i in interfaces for g in i["Groups"]}
    efa_group = pool_logical_id(training_template, "AWS::EC2::SecurityGroup", "train")
    assert groups == {
        json.dumps({"Fn::GetAtt": ["ClusterEB0386A7", "ClusterSecurityGroupId"]}),
        json.dumps(
            {"Fn::GetAtt": [efa_group, "GroupId"]},
            sort_keys=True,
        ),
    }


def test_only_an_efa_pool_outside_reserved_capacity_gets_a_placement_group_of_its_own(
    training_template,
):
    """A Capacity Block is placed together already, and a placement group can fail its
    launches while it has room (EC2 UG capacity-blocks-using; AWS ParallelCluster's
    PlacementGroupCapacityTypeValidator): `train` has none. `train-od`, on demand, has its own
    cluster placement group, and `kodcr` launches into its reservation's group by name."""
    groups = resources(training_template, "AWS::EC2::PlacementGroup")
    assert [_owner(k) for k in groups] == ["train-od"]
    (group,) = groups.values()
    assert group["Properties"] == {"Strategy": "cluster"}
    assert "Placement" not in launch_template_data(training_template, "train")
    placement = launch_template_data(training_template, "train-od")["Placement"]
    assert ref_id(placement["GroupName"]) == pool_logical_id(
        training_template, "AWS::EC2::PlacementGroup", "train-od"
    )
    node_class = _karpenter_manifest(training_template, "EC2NodeClass")
    assert node_class["spec"]["placementGroupSelector"] == {"name": ODCR_PLACEMENT_GROUP}


def test_efa_security_group_allows_all_traffic_within_itself(training_template):
    group = pool_logical_id(training_template, "AWS::EC2::SecurityGroup", "train")
    group_ref = {"Fn::GetAtt": [group, "GroupId"]}
    ingress = pool_resource(training_template, "AWS::EC2::SecurityGroupIngress", "train")
    egress = pool_resource(training_template, "AWS::EC2::SecurityGroupEgress", "train")
    assert ingress["Properties"]["IpProtocol"] == egress["Properties"]["IpProtocol"] == "-1"
    assert ingress["Properties"]["GroupId"] == ingress["Properties"]["SourceSecurityGroupId"]
    assert egress["Properties"]["DestinationSecurityGroupId"] == group_ref
    assert ingress["Properties"]["GroupId"] == group_ref


def test_a_pool_without_efa_has_no_interfaces_placement_or_efa_plugin(training_template):
    data = launch_template_data(training_template, "odcr")
    assert "NetworkInterfaces" not in data and "Placement" not in data


def test_scale_up_ranks_the_reserved_group_before_its_on_demand_fallback(training_template):
    """CA's own rules over its priorities ConfigMap: the node templates from the ASG tags
    filter the groups that fit an 8-GPU, 32-EFA pod, then the priority expander keeps the
    highest."""
    priorities = autoscaler_priorities(training_template)
    pod = {
        "spec": {
            "nodeSelector": {"workload": "training"},
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {"resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}}
            ],
        }
    }
    pool_of_asg = {}
    fitting = []
    for logical_id, r in resources(training_template, ASG_TAGS).items():
        tags = {render(t["Key"]): t["Value"] for t in r["Properties"]["Tags"]}
        asg = f"<GetAtt:{logical_id}.AsgName>"
        pool_of_asg[asg] = tags["k8s.io/cluster-autoscaler/node-template/label/gpu-pool.io/pool"]
        if pod_fits_template(pod, node_template(tags)):
            fitting.append(asg)

    def priority(asg):
        return max(p for p, rs in priorities.items() if any(re.search(r, asg) for r in rs))

    ranked = sorted(fitting, key=priority, reverse=True)
    assert [pool_of_asg[a] for a in ranked] == ["train", "train-od"]
    assert priority(ranked[0]) > priority(ranked[1])


def test_efa_node_template_advertises_interfaces_and_hugepages(training_template):
    """CA's zero-node template (its own parsing rules) offers what an EFA pod requests."""
    pools = []
    for r in resources(training_template, ASG_TAGS).values():
        tags = {render(t["Key"]): t["Value"] for t in r["Properties"]["Tags"]}
        pool = tags["k8s.io/cluster-autoscaler/node-template/label/gpu-pool.io/pool"]
        pools.append(pool)
        allocatable = node_template(tags)["allocatable"]
        if pool in ("train", "train-od"):
            assert allocatable["vpc.amazonaws.com/efa"] == "32"
            assert allocatable["hugepages-2Mi"] == "10256Mi"
        else:
            assert "vpc.amazonaws.com/efa" not in allocatable
    assert sorted(pools) == ["odcr", "train", "train-od"]


def test_every_efa_node_runs_one_efa_plugin_and_every_gpu_node_one_nvidia_plugin(
    training_template,
):
    plugins = {}
    for r in resources(training_template, HELM).values():
        props = r["Properties"]
        if props["Chart"] == "aws-efa-k8s-device-plugin":
            assert props["Version"] == "v0.5.30"
            assert props["Repository"] == "https://aws.github.io/eks-charts"
            values = helm_values(r)
            # The chart's template puts CriticalAddonsOnly before the values' tolerations.
            values["tolerations"] = [
                {"key": "CriticalAddonsOnly", "operator": "Exists"},
                *values["tolerations"],
            ]
            plugins[props["Release"]] = values
        elif props["Chart"] == "nvidia-device-plugin":
            values = helm_values(r)
            plugins[props["Release"]] = values
            efa_pool = values["nodeSelector"]["gpu-pool.io/pool"] in ("train", "train-od", "kodcr")
            assert values.get("mofedEnabled") is (False if efa_pool else None)
    for props in (r["Properties"] for r in resources(training_template, NODEGROUP).values()):
        running = sorted(r for r, pod in plugins.items() if pod_fits_node(pod, *node_of(props)))
        pool = props["Labels"].get("gpu-pool.io/pool")
        if pool in ("train", "train-od"):
            assert running == [f"aws-efa-k8s-device-plugin-{pool}", f"nvidia-device-plugin-{pool}"]
        elif pool is not None:
            assert running == [f"nvidia-device-plugin-{pool}"]
        else:
            assert running == []


def _karpenter_manifest(template, kind):
    for r in resources(template, "Custom::AWSCDK-EKS-KubernetesResource").values():
        for manifest in json.loads(render(r["Properties"]["Manifest"])):
            if manifest.get("kind") == kind:
                return manifest
    raise AssertionError(kind)


def test_karpenter_reserved_efa_pool_selects_its_reservation_and_falls_back(training_template):
    """The API server's verdict on both objects: tests/e2e/test_karpenter_crds.py."""
    node_pool = _karpenter_manifest(training_template, "NodePool")
    node_class = _karpenter_manifest(training_template, "EC2NodeClass")
    spec = node_class["spec"]
    assert spec["capacityReservationSelectorTerms"] == [{"id": ODCR_ID}]
    assert spec["placementGroupSelector"] == {"name": ODCR_PLACEMENT_GROUP}
    efa_group = pool_logical_id(training_template, "AWS::EC2::SecurityGroup", "kodcr")
    assert [t["id"] for t in spec["securityGroupSelectorTerms"]] == [
        "<GetAtt:ClusterEB0386A7.ClusterSecurityGroupId>",
        f"<GetAtt:{efa_group}.GroupId>",
    ]
    # Karpenter attaches one EFA interface per card itself for pods requesting EFA.
    assert "networkInterfaces" not in spec
    template_spec = node_pool["spec"]["template"]["spec"]
    requirements = {r["key"]: r["values"] for r in template_spec["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["reserved", "on-demand"]
    # With an on-demand fallback the pool's own disruption settings: empty nodes go.
    assert node_pool["spec"]["disruption"]["consolidateAfter"] == "5m"
    assert template_spec["expireAfter"] == "720h"


def test_cfn_lint_finds_nothing_in_the_training_stack(training_template):
    """Launch template data (reservation, market options, 32 interfaces, placement) against
    the CloudFormation resource schemas, with the project's ignore list plus W3010 (zones)."""
    from tests.support.cfn_lint import cfn_lint

    assert cfn_lint(training_template.to_json(), also_ignore=["W3010"]) == []


@pytest.mark.parametrize("preference", ["open", "capacity-reservations-only"])
def test_odcr_preference_and_resource_group_forms(preference):
    from gpu_pool.plan.pool import plan_pool
    from gpu_pool.settings import PoolSettings

    plan = plan_pool(PoolSettings(capacity_reservation={"type": "odcr", "preference": preference}))
    assert plan.capacity.capacity_reservation_specification() == {
        "CapacityReservationPreference": preference
    }
    group = "arn:aws:resource-groups:us-east-1:123456789012:group/training"
    plan = plan_pool(
        PoolSettings(capacity_reservation={"type": "odcr", "resource_group_arn": group})
    )
    assert plan.capacity.capacity_reservation_specification() == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": group},
    }


def test_a_cached_block_lookup_that_disagrees_stops_the_synth_before_anything_is_built():
    """The CLI caches the lookup in cdk.context.json; here the context holds its answer."""
    import aws_cdk as cdk

    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import ConfigError, load_settings
    from tests.support.looked_up import capacity_block_key

    probe = cdk.Stack(
        unvalidated_app(), "P", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    key = capacity_block_key(probe)
    # docs/training.md shows the cached entry under this key, for `cdk context --reset`.
    assert f'"{key}": [' in (ROOT / "docs/training.md").read_text(encoding="utf-8")
    answer = {"AvailabilityZone": "us-east-1b", "InstanceType": "p5.48xlarge"}
    app = unvalidated_app(context={key: [{**answer, "TotalInstanceCount": 4}]})
    with pytest.raises(ConfigError) as err:
        GpuPoolStack(app, "T", settings=load_settings(TRAINING, None))
    assert str(err.value).splitlines() == [
        f"pools.train.zones: us-east-1a, but reservation {CAPACITY_BLOCK_ID} (cdk.context.json) "
        "is in us-east-1b: list [us-east-1b]"
    ]
    (stack,) = app.node.children
    assert stack.node.children == []


def test_an_imported_clusters_efa_pool_needs_its_vpc_and_security_group():
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from gpu_pool import ConfigError, GpuNodePool
    from gpu_pool.settings import PoolSettings
    from tests.support.user_app import imported_cluster

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = imported_cluster(stack)
    settings = PoolSettings(
        name="train", instance_types=["p5.48xlarge"], zones=["us-east-1a"], efa=True
    )
    with pytest.raises(ConfigError) as raised:
        GpuNodePool(stack, "Train", cluster=cluster, subnets=[subnet], settings=settings)
    assert str(raised.value) == (
        "GpuNodePool 'S/Train': pool.efa: an imported cluster's EFA pool needs `vpc` and "
        "`cluster_security_group_id` "
        "(its EFA security group lives in the VPC, and its interfaces join the cluster security "
        "group)"
    )
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a"]
    )
    pool = GpuNodePool(
        stack,
        "Train2",
        cluster=cluster,
        subnets=[subnet],
        settings=settings.model_copy(update={"name": "train2"}),
        vpc=vpc,
        cluster_security_group_id="sg-0123456789abcdef0",
    )
    assert pool.placement_group is not None
