"""What waits for what when the stack is created (issue #31 item 5): Cluster Autoscaler's chart
installs while the node groups create; only its priorities ConfigMap, which names their ASGs,
waits for them (and for the chart, whose earlier releases rendered that ConfigMap)."""

from tests.support.cfn import resources
from tools.critical_path import dependency_graph

KUBERNETES_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"
NODE_GROUP_TYPES = ("AWS::EKS::Nodegroup", "Custom::GpuPoolAsgTags")


def _waits_for(graph, logical_id):
    """Everything `logical_id` waits for, directly or not."""
    seen, todo = set(), [logical_id]
    while todo:
        for dependency in graph[todo.pop()] - seen:
            seen.add(dependency)
            todo.append(dependency)
    return seen


def _ids(template, prefix):
    return [k for k in template.to_json()["Resources"] if k.startswith(prefix)]


def test_autoscaler_chart_does_not_wait_for_node_groups(three_pools_template):
    template = three_pools_template.to_json()
    graph = dependency_graph(template)
    (chart,) = _ids(three_pools_template, "ClusterAutoscalerChart")
    waited = {template["Resources"][d]["Type"] for d in _waits_for(graph, chart)}
    assert not waited & set(NODE_GROUP_TYPES)
    assert "AWS::EKS::Cluster" in waited


def test_priorities_config_map_waits_for_every_groups_tags_and_the_chart(three_pools_template):
    graph = dependency_graph(three_pools_template.to_json())
    (chart,) = _ids(three_pools_template, "ClusterAutoscalerChart")
    (priorities,) = _ids(three_pools_template, "ClusterAutoscalerPriorities")
    tags = set(resources(three_pools_template, "Custom::GpuPoolAsgTags"))
    assert len(tags) > 1
    assert tags | {chart} <= graph[priorities]
    assert priorities in resources(three_pools_template, KUBERNETES_RESOURCE)


def test_chart_waits_only_for_groups_whose_tags_lower_their_gpu_count():
    """Renamed time-slicing and mixed MIG nodes advertise no whole nvidia.com/gpu, which only
    their tags tell CA (resources/nvidia.com/gpu=0): before the tags exist CA would count the
    instance's GPUs (aws_manager.go buildNodeFromTemplate) and could scale such a group up for
    a pod it cannot run. The chart waits for those tag resources only."""
    from tests.support.cfn import render, synth
    from tests.synth.test_sharing import SHARING

    template = synth(SHARING).to_json()
    graph = dependency_graph(template)
    (chart,) = [k for k in template["Resources"] if k.startswith("ClusterAutoscalerChart")]
    waited = {
        template["Resources"][k]["Properties"]["NodegroupName"]["Fn::GetAtt"][0]
        for k in _waits_for(graph, chart)
        if template["Resources"][k]["Type"] == "Custom::GpuPoolAsgTags"
    }
    pools = {
        render(template["Resources"][k]["Properties"]["Labels"]["gpu-pool.io/pool"])
        for k in waited
    }
    assert pools == {"shared", "mig"}
