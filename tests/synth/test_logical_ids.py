"""Logical IDs users' deployed stacks depend on: a change here replaces live resources."""

from gpu_pool.cdk.nodegroups.asg_tags import RESOURCE_TYPE
from tests.support.cfn import resources


def ids(template, type_name):
    return sorted(resources(template, type_name))


def test_node_groups_tag_writers_and_charts_keep_their_logical_ids(
    default_template, multi_template
):
    assert ids(default_template, "AWS::EKS::Nodegroup") == [
        "ClusterNodegroupSystemNodes9C3907F1",
        "GpuPoolG5Xlarge2D99A550",
    ]
    assert ids(default_template, RESOURCE_TYPE) == ["GpuPoolG5XlargeAsgTagsF7E9CFEA"]
    assert ids(default_template, "Custom::AWSCDK-EKS-HelmChart") == [
        "ClusterAutoscalerChartCB4AC47F",
        "GpuPoolDevicePlugin80DE89DD",
    ]
    zonal = [
        i for i in ids(multi_template, "AWS::EKS::Nodegroup") if i.startswith("GpuPoolG5Xlarge")
    ]
    assert [i[:-8] for i in zonal] == ["GpuPoolG5XlargeUsEast1a", "GpuPoolG5XlargeUsEast1b"]
