"""tools/critical_path.py: the dependency graph and the longest chain of creates, on small
templates (the table's figures, never this machine's timings)."""

from tools.critical_path import create_seconds, critical_path, dependency_graph

TEMPLATE = {
    "Parameters": {"Size": {"Type": "Number"}},
    "Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC"},
        "Role": {"Type": "AWS::IAM::Role"},
        "Cluster": {
            "Type": "AWS::EKS::Cluster",
            "DependsOn": "Vpc",
            "Properties": {"RoleArn": {"Fn::GetAtt": ["Role", "Arn"]}},
        },
        "Group": {
            "Type": "AWS::EKS::Nodegroup",
            "Properties": {"ClusterName": {"Ref": "Cluster"}, "Size": {"Ref": "Size"}},
        },
        "Tags": {
            "Type": "Custom::GpuPoolAsgTags",
            "Properties": {"NodegroupName": {"Fn::GetAtt": "Group.NodegroupName"}},
        },
        "Chart": {
            "Type": "Custom::AWSCDK-EKS-HelmChart",
            "DependsOn": ["Cluster"],
            "Properties": {"Region": {"Fn::Sub": "${AWS::Region}"}},
        },
        "Priorities": {
            "Type": "Custom::AWSCDK-EKS-KubernetesResource",
            "DependsOn": ["Chart"],
            "Properties": {
                "Manifest": {
                    "Fn::Sub": [
                        "^${Tags.AsgName}$ ${!Literal} ${Own}",
                        {"Own": {"Ref": "AWS::StackName"}},
                    ]
                }
            },
        },
    },
}


def test_dependencies_come_from_depends_on_ref_getatt_and_sub():
    assert dependency_graph(TEMPLATE) == {
        "Vpc": set(),
        "Role": set(),
        # DependsOn as a string, GetAtt as a list
        "Cluster": {"Vpc", "Role"},
        # a Ref to a parameter is no resource
        "Group": {"Cluster"},
        # GetAtt as "Id.Attribute"
        "Tags": {"Group"},
        # ${AWS::Region} is a pseudo parameter
        "Chart": {"Cluster"},
        # ${Id.Attr} counts; ${!Literal} and the Sub's own variables do not
        "Priorities": {"Chart", "Tags"},
    }


def test_the_longest_chain_of_creates_wins():
    seconds, path = critical_path(TEMPLATE)
    # Through the node group (120 s) and its tags, not through the chart (60 s).
    assert path == ["Vpc", "Cluster", "Group", "Tags", "Priorities"]
    assert seconds == 15 + 600 + 120 + 15 + 20


def test_types_outside_the_table():
    assert create_seconds("Custom::SomethingElse") == create_seconds("Custom::GpuPoolAsgTags")
    assert create_seconds("AWS::Some::Resource") == create_seconds("AWS::EC2::Route")
