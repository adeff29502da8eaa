"""The managed node groups: every property a GPU pod's scheduling depends on."""

from aws_cdk.assertions import Match

from tests.support.cfn import only, resources, synth

NODEGROUP = "AWS::EKS::Nodegroup"


def gpu_groups(template):
    return {
        k: r["Properties"]
        for k, r in resources(template, NODEGROUP).items()
        if r["Properties"]["AmiType"].endswith("NVIDIA")
    }


def test_default_group_is_scale_from_zero_tainted_and_labelled(default_template):
    _, props = only(gpu_groups(default_template))
    assert props["AmiType"] == "AL2023_x86_64_NVIDIA"
    assert props["InstanceTypes"] == ["g5.xlarge"]
    assert props["CapacityType"] == "ON_DEMAND"
    assert props["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 0, "MaxSize": 8}
    # The 200 GiB volume is in the launch template (tests/test_security.py); not both.
    assert "DiskSize" not in props
    assert props["Labels"] == {
        "accelerator": "nvidia",
        "workload": "inference",
        "gpu-pool.io/pool": "gpu",
        "nvidia.com/gpu.present": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-a10g",
        # Keeps a GPU Operator, if one is installed for another pool, off these nodes.
        "nvidia.com/gpu.deploy.operands": "false",
    }
    # EKS API spelling on the node group.
    assert props["Taints"] == [{"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NO_SCHEDULE"}]
    # No explicit name: a replacement (AMI, instance type) must not collide with itself.
    assert "NodegroupName" not in props


def test_node_role_has_worker_policies_only(default_template):
    _, props = only(gpu_groups(default_template))
    role_id = props["NodeRole"]["Fn::GetAtt"][0]
    role = default_template.to_json()["Resources"][role_id]["Properties"]
    policies = sorted(p["Fn::Join"][1][-1] for p in role["ManagedPolicyArns"])
    assert policies == [
        ":iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        ":iam::aws:policy/AmazonEKSWorkerNodePolicy",
        ":iam::aws:policy/AmazonEKS_CNI_Policy",
    ]
    assert "Policies" not in role


def test_one_group_per_instance_type_per_zone(multi_template):
    groups = gpu_groups(multi_template)
    assert len(groups) == 10
    by_type_zone = {
        (p["InstanceTypes"][0], tuple(sorted(s["Ref"] for s in p["Subnets"])))
        for p in groups.values()
    }
    assert len(by_type_zone) == 10
    for props in groups.values():
        assert len(props["Subnets"]) == 1


def test_arm_gpu_types_get_the_arm_ami(multi_template):
    ami_by_type = {p["InstanceTypes"][0]: p["AmiType"] for p in gpu_groups(multi_template).values()}
    assert ami_by_type == {
        "g5.xlarge": "AL2023_x86_64_NVIDIA",
        "g6e.12xlarge": "AL2023_x86_64_NVIDIA",
        "p5.48xlarge": "AL2023_x86_64_NVIDIA",
        "p6-b200.48xlarge": "AL2023_x86_64_NVIDIA",
        "g5g.xlarge": "AL2023_ARM_64_NVIDIA",
    }


def test_existing_cluster_groups_use_its_name_and_zone_subnets(existing_template):
    _, props = only(gpu_groups(existing_template))
    assert props["ClusterName"] == "platform-prod"
    assert sorted(props["Subnets"]) == ["subnet-0bbbbbbbbbbbbbbbb", "subnet-0cccccccccccccccc"]
    existing_template.resource_count_is("AWS::EKS::Cluster", 0)


def test_system_node_group_for_add_ons(default_template):
    default_template.has_resource_properties(
        NODEGROUP,
        {
            "AmiType": "AL2023_x86_64_STANDARD",
            "InstanceTypes": ["t3.medium"],
            "Labels": {"gpu-pool.io/role": "system"},
            "ScalingConfig": {"MinSize": 1, "DesiredSize": 2, "MaxSize": 3},
            "Taints": Match.absent(),
        },
    )


def test_a_mixed_model_group_carries_nvidia_mixed_on_its_nodes_and_asg():
    template = synth({"pool": {"instance_types": [["g6.xlarge", "g5.xlarge"]]}})
    (group,) = [
        r["Properties"]
        for r in resources(template, "AWS::EKS::Nodegroup").values()
        if "gpu-pool.io/pool" in r["Properties"]["Labels"]
    ]
    assert group["Labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-mixed"
    (tags,) = [
        r["Properties"]["Tags"] for r in resources(template, "Custom::GpuPoolAsgTags").values()
    ]
    assert {
        "Key": "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator",
        "Value": "nvidia-mixed",
    } in tags
