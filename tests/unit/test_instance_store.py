"""`instance_store: raid0` (plan/instance_store.py): the catalog's instance store facts, the
NodeConfig node groups write, the MIME user data EKS merges, the EC2NodeClass field, Cluster
Autoscaler's ephemeral storage, and the rules, each with its exact message. The API server judges
the NodeConfig by nodeadm's CRD (tests/e2e/test_custom_resources.py) and the EC2NodeClass by
Karpenter's (tests/e2e/test_karpenter_crds.py)."""

import email

import pytest
import yaml

from gpu_pool.model.catalog import lookup
from gpu_pool.plan.instance_store import local_storage_node_config, node_config_user_data
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings
from tests.support import rules

EPHEMERAL = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"


def test_the_catalog_knows_each_types_instance_store():
    # EKS's UltraServer guide: 3 x 7.5 TB; Karpenter's table (EC2's data) for the rest.
    assert lookup("p6e-gb200.36xlarge").instance_store_gb == 22500
    assert lookup("p5.48xlarge").instance_store_gb == 30400
    assert lookup("g6e.xlarge").instance_store_gb == 250
    assert lookup("g5g.xlarge").instance_store_gb == 0
    assert lookup("p3.2xlarge").instance_store_gb == 0


def test_the_node_config_stripes_the_instance_store():
    config = local_storage_node_config()
    assert config == {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"instance": {"localStorage": {"strategy": "RAID0"}}},
    }


def test_the_user_data_is_one_mime_part_of_the_node_config():
    """EKS merges a launch template's MIME multi-part user data with its own bootstrap; nodeadm
    reads the parts of type application/node.eks.aws."""
    message = email.message_from_string(node_config_user_data(local_storage_node_config()))
    assert message.get_content_type() == "multipart/mixed"
    (part,) = message.get_payload()
    assert part.get_content_type() == "application/node.eks.aws"
    assert yaml.safe_load(part.get_payload()) == local_storage_node_config()


def _plan(**settings):
    return plan_pool(PoolSettings(**settings), "pool")


def test_a_raid0_node_group_tells_cluster_autoscaler_its_instance_store():
    """kubelet's root is on the array: a node's ephemeral storage is its instance store (the
    group's smallest type), not the EBS volume."""
    (group,) = _plan(instance_types=[["g6e.xlarge", "g5.xlarge"]], instance_store="raid0").node_groups
    assert group.node_template_tags()[EPHEMERAL] == "250G"
    (plain,) = _plan(instance_types=["g6e.xlarge"]).node_groups
    assert plain.node_template_tags()[EPHEMERAL] == "200Gi"


def test_a_karpenter_pool_sets_its_ec2nodeclass_instance_store_policy():
    """The API server's verdict on it: tests/e2e/test_karpenter_crds.py."""
    plan = _plan(provisioner="karpenter", instance_types=["g6e.xlarge"], instance_store="raid0")
    assert plan.karpenter is not None
    node_class = plan.karpenter.ec2_node_class("role", ["subnet-1"], ["sg-1"], {})
    assert node_class["spec"]["instanceStorePolicy"] == "RAID0"
    plain = _plan(provisioner="karpenter", instance_types=["g6e.xlarge"]).karpenter
    assert "instanceStorePolicy" not in plain.ec2_node_class("role", [], [], {})["spec"]


def test_raid0_is_the_default_on_ultraserver_pools_only():
    assert _plan(instance_types=["p6e-gb200.36xlarge"]).instance_store_raid0
    assert not _plan(instance_types=["p6e-gb200.36xlarge"], instance_store="none").instance_store_raid0
    assert not _plan(instance_types=["p5.48xlarge"]).instance_store_raid0


CASES = {
    "a-type-without-instance-store": (
        {"pool": {"instance_types": [["g5g.xlarge"], ["g5g.2xlarge"]], "instance_store": "raid0"}},
        [
            (
                "E",
                f"pool.instance_store: 'raid0' with {name}, which has no instance store (EC2 "
                "DescribeInstanceTypes InstanceStorageInfo; EBS only): remove instance_store, or "
                "use types with an NVMe instance store",
            )
            for name in ("g5g.2xlarge", "g5g.xlarge")
        ],
    ),
    "bottlerocket-node-groups": (
        {"pool": {"ami_family": "BOTTLEROCKET", "instance_store": "raid0"}},
        [
            (
                "E",
                "pool.instance_store: 'raid0' on Bottlerocket: gpu-pool stripes the instance "
                "store through nodeadm's NodeConfig (spec.instance.localStorage), which only "
                "AL2023 reads: use ami_family: AL2023, or remove instance_store",
            )
        ],
    ),
    "auto-mode": (
        {"pool": {"provisioner": "auto-mode", "instance_store": "raid0"}},
        [
            (
                "E",
                "pool.instance_store: 'raid0' with provisioner: auto-mode: EKS Auto Mode sets up "
                "its nodes' storage itself, and its NodeClass has no instance store setting: "
                "remove instance_store",
            )
        ],
    ),
    "a-type-with-one": ({"pool": {"instance_types": ["g6e.xlarge"], "instance_store": "raid0"}}, []),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected
