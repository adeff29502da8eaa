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
