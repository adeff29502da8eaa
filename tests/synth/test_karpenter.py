"""Karpenter as a pool's provisioner: the installation, each pool's NodePool and EC2NodeClass,
and how they sit beside node-group pools. The API server judges the NodePools and EC2NodeClasses
with Karpenter's own CRDs in tests/e2e/test_karpenter_crds.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.settings import deep_merge
from tests.support.cfn import (
    autoscaler_priorities,
    helm_values,
    only,
    render,
    resources,
    synth_stack,
    unvalidated_app,
)
from tests.support.chart_defaults import DEVICE_PLUGIN_CHART_DEFAULTS
from tests.support.settings import KARPENTER, KMS_KEY

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def charts(template) -> dict[str, tuple[str, dict[str, Any]]]:
    """Release name -> (logical id, properties)."""
    return {
        r["Properties"]["Release"]: (logical_id, r)
        for logical_id, r in resources(template, HELM).items()
    }


def logical_id(template, type_name: str, prefix: str) -> str:
    (found,) = [k for k in resources(template, type_name) if k.startswith(prefix)]
    return found


def manifests(template) -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, name) -> the manifest as kubectl will apply it (tokens as placeholders), without
    the label aws-cdk-lib adds to every manifest for pruning."""
    found = {}
    for resource in resources(template, MANIFEST).values():
        for manifest in json.loads(render(resource["Properties"]["Manifest"])):
            metadata = manifest["metadata"]
            labels = metadata.pop("labels", {})
            assert [k for k in labels if not k.startswith("aws.cdk.eks/prune-")] == []
            found[(manifest["kind"], metadata["name"])] = manifest
    return found


# -- the installation ----------------------------------------------------------------------------


def test_crd_chart_then_controller_chart_pinned_from_public_ecr(karpenter_template):
    releases = charts(karpenter_template)
    crd_id, crd = releases["karpenter-crd"]
    controller_id, controller = releases["karpenter"]
    assert {k: crd["Properties"][k] for k in ("Chart", "Repository", "Version", "Namespace")} == {
        "Chart": "karpenter-crd",
        "Repository": "oci://public.ecr.aws/karpenter/karpenter-crd",
        "Version": "1.15.0",
        "Namespace": "kube-system",
    }
    assert {
        k: controller["Properties"][k] for k in ("Chart", "Repository", "Version", "Namespace")
    } == {
        "Chart": "karpenter",
        "Repository": "oci://public.ecr.aws/karpenter/karpenter",
        "Version": "1.15.0",
        "Namespace": "kube-system",
    }
    association = logical_id(
        karpenter_template, "AWS::EKS::PodIdentityAssociation", "KarpenterPodIdentity"
    )
    # The add-on keeps the id the default app gave it, whichever controller the stack has.
    agent = logical_id(karpenter_template, "AWS::EKS::Addon", "ClusterAutoscalerPodIdentityAgent")
    assert {crd_id, association, agent} <= set(controller["DependsOn"])
    assert controller_id not in crd.get("DependsOn", [])


def test_controller_values_name_the_cluster_and_queue_and_run_on_system_nodes(karpenter_template):
    _, controller = charts(karpenter_template)["karpenter"]
    queue = logical_id(karpenter_template, "AWS::SQS::Queue", "KarpenterInterruptionQueue")
    assert helm_values(controller) == {
        "settings": {
            "clusterName": "gpu-pool",
            "interruptionQueue": f"<GetAtt:{queue}.QueueName>",
            # Its pools repair by default (plan/repair.py), rebooting in place where a reboot
            # clears the fault.
            "featureGates": {"nodeRepair": True},
            "awsFeatureGates": {"rebootForRepair": True},
        },
        "serviceAccount": {"create": True, "name": "karpenter"},
        # Upstream's getting-started sizing, requests equal to limits: Guaranteed QoS.
        "controller": {
            "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"},
                "limits": {"cpu": "1", "memory": "1Gi"},
            }
        },
        "nodeSelector": {"gpu-pool.io/role": "system"},
    }


def test_pod_identity_ties_the_service_account_to_the_controller_role(karpenter_template):
    _, association = only(resources(karpenter_template, "AWS::EKS::PodIdentityAssociation"))
    role = logical_id(karpenter_template, "AWS::IAM::Role", "KarpenterControllerRole")
    cluster = logical_id(karpenter_template, "AWS::EKS::Cluster", "Cluster")
    assert render(association["Properties"]) == {
        "ClusterName": f"<Ref:{cluster}>",
        "Namespace": "kube-system",
        "ServiceAccount": "karpenter",
        "RoleArn": f"<GetAtt:{role}.Arn>",
    }
    trust = resources(karpenter_template, "AWS::IAM::Role")[role]["Properties"]
    assert trust["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
        }
    ]


def test_node_role_is_admitted_with_an_ec2_linux_access_entry(karpenter_template):
    entry = resources(karpenter_template, "AWS::EKS::AccessEntry")[
        logical_id(karpenter_template, "AWS::EKS::AccessEntry", "KarpenterNodeAccessEntry")
    ]
    node_role = logical_id(karpenter_template, "AWS::IAM::Role", "KarpenterNodeRole")
    assert entry["Properties"]["Type"] == "EC2_LINUX"
    assert entry["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [node_role, "Arn"]}
    policies = resources(karpenter_template, "AWS::IAM::Role")[node_role]["Properties"][
        "ManagedPolicyArns"
    ]
    assert sorted(render(p).rsplit("/", 1)[-1] for p in policies) == [
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
    ]


def test_interruption_queue_keeps_messages_300s_encrypted_and_tls_only(karpenter_template):
    queue_id, queue = only(resources(karpenter_template, "AWS::SQS::Queue"))
    assert queue["Properties"] == {"MessageRetentionPeriod": 300, "SqsManagedSseEnabled": True}
    _, policy = only(resources(karpenter_template, "AWS::SQS::QueuePolicy"))
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statements[0] == {
        "Action": "sqs:*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Resource": {"Fn::GetAtt": [queue_id, "Arn"]},
    }
    # Each rule may send (aws-cdk-lib's grant adds the two reads), and only that rule.
    rules = resources(karpenter_template, "AWS::Events::Rule")
    assert sorted(statements[1:], key=json.dumps) == sorted(
        (
            {
                "Action": ["sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"],
                "Condition": {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [rule, "Arn"]}}},
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Resource": {"Fn::GetAtt": [queue_id, "Arn"]},
            }
            for rule in rules
        ),
        key=json.dumps,
    )


def test_exactly_five_rules_each_sending_one_event_type_to_the_queue(karpenter_template):
    queue_id, _ = only(resources(karpenter_template, "AWS::SQS::Queue"))
    rules = resources(karpenter_template, "AWS::Events::Rule").values()
    patterns = sorted(
        (r["Properties"]["EventPattern"]["source"], r["Properties"]["EventPattern"]["detail-type"])
        for r in rules
    )
    assert patterns == [
        (["aws.ec2"], ["EC2 Capacity Reservation Instance Interruption Warning"]),
        (["aws.ec2"], ["EC2 Instance Rebalance Recommendation"]),
        (["aws.ec2"], ["EC2 Instance State-change Notification"]),
        (["aws.ec2"], ["EC2 Spot Instance Interruption Warning"]),
        (["aws.health"], ["AWS Health Event"]),
    ]
    for rule in rules:
        ((target),) = rule["Properties"]["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
        assert rule["Properties"]["State"] == "ENABLED"


# Every controller statement, as upstream's v1.15 getting-started CloudFormation has it
# (website/content/en/v1.15/reference/cloudformation.md; 1.15 added ec2:RebootInstances), with
# this cluster's name: Sid -> (actions, resources, conditions).
P, R, A = "<Ref:AWS::Partition>", "<Ref:AWS::Region>", "<Ref:AWS::AccountId>"
EC2 = f"arn:{P}:ec2:{R}:*"
LAUNCHED = [
    f"{EC2}:{t}/*"
    for t in (
        "fleet",
        "instance",
        "volume",
        "network-interface",
        "launch-template",
        "spot-instances-request",
    )
]
OWNED = {"aws:ResourceTag/kubernetes.io/cluster/gpu-pool": "owned"}
REQUESTED = {
    "aws:RequestTag/kubernetes.io/cluster/gpu-pool": "owned",
    "aws:RequestTag/eks:eks-cluster-name": "gpu-pool",
}
PROFILES = f"arn:{P}:iam::{A}:instance-profile/*"
PROFILE_OWNED = {**OWNED, "aws:ResourceTag/topology.kubernetes.io/region": R}
PROFILE_REQUESTED = {**REQUESTED, "aws:RequestTag/topology.kubernetes.io/region": R}
CLUSTER_ARN = f"arn:{P}:eks:{R}:{A}:cluster/gpu-pool"
EXPECTED_STATEMENTS = {
    "NodeLifecycle": {
        "AllowScopedEC2InstanceAccessActions": (
            ["ec2:RunInstances", "ec2:CreateFleet"],
            [
                f"arn:{P}:ec2:{R}::image/*",
                f"arn:{P}:ec2:{R}::snapshot/*",
                f"{EC2}:security-group/*",
                f"{EC2}:subnet/*",
                f"{EC2}:capacity-reservation/*",
                f"{EC2}:placement-group/*",
            ],
            None,
        ),
        "AllowScopedEC2LaunchTemplateAccessActions": (
            ["ec2:RunInstances", "ec2:CreateFleet"],
            f"{EC2}:launch-template/*",
            {
                "StringEquals": OWNED,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            },
        ),
        "AllowScopedEC2InstanceActionsWithTags": (
            ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            LAUNCHED,
            {
                "StringEquals": REQUESTED,
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        ),
        "AllowScopedResourceCreationTagging": (
            "ec2:CreateTags",
            LAUNCHED,
            {
                "StringEquals": {
                    **REQUESTED,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        ),
        "AllowScopedResourceTagging": (
            "ec2:CreateTags",
            f"{EC2}:instance/*",
            {
                "StringEquals": OWNED,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": "gpu-pool"},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        ),
        "AllowScopedDeletion": (
            ["ec2:TerminateInstances", "ec2:RebootInstances", "ec2:DeleteLaunchTemplate"],
            [f"{EC2}:instance/*", f"{EC2}:launch-template/*"],
            {
                "StringEquals": OWNED,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            },
        ),
    },
    "IamIntegration": {
        "AllowPassingInstanceRole": (
            "iam:PassRole",
            "<GetAtt:NODE_ROLE.Arn>",
            {
                "StringEquals": {
                    "iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]
                }
            },
        ),
        "AllowScopedInstanceProfileCreationActions": (
            "iam:CreateInstanceProfile",
            PROFILES,
            {
                "StringEquals": PROFILE_REQUESTED,
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
        "AllowScopedInstanceProfileTagActions": (
            "iam:TagInstanceProfile",
            PROFILES,
            {
                "StringEquals": {**PROFILE_OWNED, **PROFILE_REQUESTED},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        ),
        "AllowScopedInstanceProfileActions": (
            [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            PROFILES,
            {
                "StringEquals": PROFILE_OWNED,
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
    },
    "EksIntegration": {
        "AllowAPIServerEndpointDiscovery": ("eks:DescribeCluster", CLUSTER_ARN, None),
    },
    "Interruption": {
        "AllowInterruptionQueueActions": (
            ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            "<GetAtt:QUEUE.Arn>",
            None,
        ),
    },
    "ZonalShift": {
        "AllowZonalShiftStatusReadOnly": (
            "arc-zonal-shift:GetManagedResource",
            "*",
            {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": CLUSTER_ARN}},
        ),
    },
    "ResourceDiscovery": {
        "AllowRegionalReadActions": (
            [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "*",
            {"StringEquals": {"aws:RequestedRegion": R}},
        ),
        "AllowSSMReadActions": (
            "ssm:GetParameter",
            f"arn:{P}:ssm:{R}::parameter/aws/service/*",
            None,
        ),
        "AllowPricingReadActions": ("pricing:GetProducts", "*", None),
        "AllowUnscopedInstanceProfileListAction": ("iam:ListInstanceProfiles", "*", None),
        "AllowInstanceProfileReadActions": ("iam:GetInstanceProfile", PROFILES, None),
    },
}


def test_every_controller_statement_with_its_scope(karpenter_template):
    role = logical_id(karpenter_template, "AWS::IAM::Role", "KarpenterControllerRole")
    placeholders = {
        "NODE_ROLE": logical_id(karpenter_template, "AWS::IAM::Role", "KarpenterNodeRole"),
        "QUEUE": logical_id(karpenter_template, "AWS::SQS::Queue", "KarpenterInterruptionQueue"),
    }
    policies = resources(karpenter_template, "AWS::IAM::ManagedPolicy")
    found = {}
    for policy_id, policy in policies.items():
        assert policy["Properties"]["Roles"] == [{"Ref": role}]
        name = policy_id.removeprefix("Karpenter")[: -len("Policy") - 8]
        found[name] = {
            s["Sid"]: (s["Action"], s["Resource"], s.get("Condition"))
            for s in render(policy["Properties"]["PolicyDocument"])["Statement"]
        }
    expected = json.loads(
        json.dumps(EXPECTED_STATEMENTS)
        .replace("NODE_ROLE", placeholders["NODE_ROLE"])
        .replace("QUEUE", placeholders["QUEUE"])
    )
    assert json.loads(json.dumps(found)) == expected


def test_no_controller_statement_mutates_on_a_bare_wildcard(karpenter_template):
    read_only = ("Describe", "Get", "List")
    for policy in resources(karpenter_template, "AWS::IAM::ManagedPolicy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Resource"] == "*":
                actions = statement["Action"]
                for action in actions if isinstance(actions, list) else [actions]:
                    assert action.split(":", 1)[1].startswith(read_only), action


# -- the pools -----------------------------------------------------------------------------------

LABELS = {
    "accelerator": "nvidia",
    "gpu-pool.io/pool": "inference",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.deploy.operands": "false",
}
IMDS = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}


def _node_class_refs(template) -> tuple[str, str]:
    node_role = logical_id(template, "AWS::IAM::Role", "KarpenterNodeRole")
    return f"<Ref:{node_role}>", "<GetAtt:ClusterEB0386A7.ClusterSecurityGroupId>"


def _requirements(types, arch, capacity):
    return [
        {
            "key": "karpenter.k8s.aws/instance-gpu-manufacturer",
            "operator": "In",
            "values": ["nvidia"],
        },
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types},
        {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
    ]


def test_al2023_x86_pool_node_pool_field_by_field(karpenter_template):
    node_pool = manifests(karpenter_template)[("NodePool", "gpu-pool-inference")]
    assert node_pool == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-pool-inference"},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {
                        **LABELS,
                        "workload": "inference",
                        "k8s.amazonaws.com/accelerator": "nvidia-mixed",
                    }
                },
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu-pool-inference",
                    },
                    "requirements": [
                        *_requirements(["g5.xlarge", "g6.xlarge"], "amd64", "on-demand"),
                        {
                            "key": "topology.kubernetes.io/zone",
                            "operator": "In",
                            "values": ["us-east-1a", "us-east-1b"],
                        },
                    ],
                    "taints": [GPU_TAINT],
                    "expireAfter": "720h",
                    # The default: an expiring node is not held by a job for more than a day.
                    "terminationGracePeriod": "24h",
                },
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "5m",
                "budgets": [{"nodes": "1"}],
            },
            "limits": {"nvidia.com/gpu": "8", "nodes": "8"},
        },
    }


def test_al2023_x86_pool_node_class_field_by_field(karpenter_template):
    node_class = manifests(karpenter_template)[("EC2NodeClass", "gpu-pool-inference")]
    role, security_group = _node_class_refs(karpenter_template)
    subnets = node_class["spec"]["subnetSelectorTerms"]
    assert len(subnets) == 2 and all(s["id"].startswith("<Ref:VpcPrivateSubnet") for s in subnets)
    assert node_class == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu-pool-inference"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@v20260714"}],
            "role": role,
            "subnetSelectorTerms": subnets,
            "securityGroupSelectorTerms": [{"id": security_group}],
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "rootVolume": True,
                    "ebs": {
                        "volumeSize": "200Gi",
                        "volumeType": "gp3",
                        "encrypted": True,
                        "deleteOnTermination": True,
                    },
                }
            ],
            "metadataOptions": IMDS,
            "tags": {"gpu-pool.io/pool": "inference"},
        },
    }


def test_arm_g5g_pool_node_pool_and_node_class_field_by_field(karpenter_template):
    found = manifests(karpenter_template)
    role, security_group = _node_class_refs(karpenter_template)
    assert found[("NodePool", "gpu-pool-arm")] == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-pool-arm"},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {
                        **LABELS,
                        "gpu-pool.io/pool": "arm",
                        "workload": "arm",
                        "k8s.amazonaws.com/accelerator": "nvidia-t4g",
                    }
                },
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu-pool-arm",
                    },
                    "requirements": _requirements(
                        ["g5g.xlarge", "g5g.16xlarge"], "arm64", "on-demand"
                    ),
                    "taints": [GPU_TAINT],
                    "expireAfter": "Never",
                    "terminationGracePeriod": "2h",
                },
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "10m",
                "budgets": [{"nodes": "1"}],
            },
            # max_size 3 nodes of the largest type (g5g.16xlarge, 2 GPUs).
            "limits": {"nvidia.com/gpu": "6", "nodes": "3"},
        },
    }
    node_class = found[("EC2NodeClass", "gpu-pool-arm")]
    subnets = node_class["spec"]["subnetSelectorTerms"]
    assert len(subnets) == 2  # no zones: every private subnet
    assert node_class == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu-pool-arm"},
        "spec": {
            # One alias for both CPUs: Karpenter picks the arm64 NVIDIA AMI for g5g.
            "amiSelectorTerms": [{"alias": "al2023@v20260714"}],
            "role": role,
            "subnetSelectorTerms": subnets,
            "securityGroupSelectorTerms": [{"id": security_group}],
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "rootVolume": True,
                    "ebs": {
                        "volumeSize": "200Gi",
                        "volumeType": "gp3",
                        "encrypted": True,
                        "deleteOnTermination": True,
                    },
                }
            ],
            "metadataOptions": IMDS,
            "tags": {"gpu-pool.io/pool": "arm"},
        },
    }


def test_bottlerocket_pool_node_pool_and_node_class_field_by_field(karpenter_template):
    found = manifests(karpenter_template)
    role, security_group = _node_class_refs(karpenter_template)
    assert found[("NodePool", "gpu-pool-rocket")] == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-pool-rocket"},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {
                        **LABELS,
                        "gpu-pool.io/pool": "rocket",
                        "workload": "rocket",
                        "k8s.amazonaws.com/accelerator": "nvidia-l40s",
                    }
                },
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu-pool-rocket",
                    },
                    "requirements": _requirements(["g6e.xlarge"], "amd64", "spot"),
                    "taints": [GPU_TAINT],
                    "expireAfter": "720h",
                    # The default: an expiring node is not held by a job for more than a day.
                    "terminationGracePeriod": "24h",
                },
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "5m",
                "budgets": [{"nodes": "1"}],
            },
            "limits": {"nvidia.com/gpu": "8", "nodes": "8"},
        },
    }
    node_class = found[("EC2NodeClass", "gpu-pool-rocket")]
    subnets = node_class["spec"]["subnetSelectorTerms"]
    volume = {
        "volumeType": "gp3",
        "encrypted": True,
        "deleteOnTermination": True,
        "kmsKeyID": KMS_KEY,
    }
    assert node_class == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu-pool-rocket"},
        "spec": {
            "amiSelectorTerms": [{"alias": "bottlerocket@v1.66.0"}],
            "role": role,
            "subnetSelectorTerms": subnets,
            "securityGroupSelectorTerms": [{"id": security_group}],
            # The OS volume stays small; images and pod storage go on the data volume.
            "blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi", **volume}},
                {
                    "deviceName": "/dev/xvdb",
                    "rootVolume": True,
                    "ebs": {"volumeSize": "300Gi", **volume},
                },
            ],
            "metadataOptions": IMDS,
            "tags": {"gpu-pool.io/pool": "rocket"},
        },
    }
    # Bottlerocket's NVIDIA AMI ships the device plugin: no chart for this pool.
    assert "nvidia-device-plugin-rocket" not in charts(karpenter_template)


def test_node_pools_are_applied_after_their_node_class_and_the_whole_installation(
    karpenter_template,
):
    manifest_resources = resources(karpenter_template, "Custom::AWSCDK-EKS-KubernetesResource")
    controller_id, _ = charts(karpenter_template)["karpenter"]
    crd_id, _ = charts(karpenter_template)["karpenter-crd"]
    entry = logical_id(karpenter_template, "AWS::EKS::AccessEntry", "KarpenterNodeAccessEntry")
    queue = logical_id(karpenter_template, "AWS::SQS::Queue", "KarpenterInterruptionQueue")
    for pool in ("Inference", "Arm", "Rocket"):
        node_class = logical_id(karpenter_template, MANIFEST, f"GpuPool{pool}NodeClass")
        node_pool = logical_id(karpenter_template, MANIFEST, f"GpuPool{pool}NodePool")
        assert node_class in manifest_resources[node_pool]["DependsOn"]
        assert {controller_id, crd_id, entry, queue} <= set(
            manifest_resources[node_class]["DependsOn"]
        )


def test_each_karpenter_node_runs_exactly_one_device_plugin_and_bottlerocket_none(
    karpenter_template,
):
    """A node as Karpenter launches it (the NodePool's template labels and taints, plus the
    labels Karpenter adds) against every device plugin DaemonSet's pods, as Helm renders
    them from the chart's defaults and our values."""
    plugins = {
        release: deep_merge(DEVICE_PLUGIN_CHART_DEFAULTS, helm_values(chart))
        for release, (_, chart) in charts(karpenter_template).items()
        if release.startswith("nvidia-device-plugin")
    }
    assert sorted(plugins) == ["nvidia-device-plugin-arm", "nvidia-device-plugin-inference"]
    stack = synth_stack(KARPENTER)
    for pool in stack.pools:
        plan = pool.plan.karpenter
        assert plan is not None
        node_pool = plan.node_pool()["spec"]["template"]
        taints = [{"value": "", **t} for t in node_pool["spec"]["taints"]]
        for gpu_type in plan.instance_types:
            labels = plan.launched_node_labels(gpu_type, "us-east-1a")
            assert labels.items() >= node_pool["metadata"]["labels"].items()
            running = [r for r, pod in plugins.items() if pod_fits_node(pod, labels, taints)]
            expected = [] if plan.name == "rocket" else [f"nvidia-device-plugin-{plan.name}"]
            assert running == expected, (plan.name, gpu_type.name)


def test_in_a_mixed_app_every_gpu_node_of_either_provisioner_runs_exactly_one_plugin(
    mixed_template,
):
    from tests.support.cfn import node_of
    from tests.support.settings import MIXED

    plugins = {
        release: deep_merge(DEVICE_PLUGIN_CHART_DEFAULTS, helm_values(chart))
        for release, (_, chart) in charts(mixed_template).items()
        if release.startswith("nvidia-device-plugin")
    }
    nodes = [
        (props["Labels"].get("gpu-pool.io/pool"), *node_of(props))
        for props in (
            r["Properties"] for r in resources(mixed_template, "AWS::EKS::Nodegroup").values()
        )
    ]
    for pool in synth_stack(MIXED).pools:
        if pool.plan.karpenter is not None:
            taints = [{"value": "", **t} for t in pool.plan.node_taints()]
            nodes += [
                (pool.plan.name, pool.plan.karpenter.launched_node_labels(t, "us-east-1a"), taints)
                for t in pool.plan.karpenter.instance_types
            ]
    assert sorted(name or "-" for name, _, _ in nodes) == ["-", "inference", "training"]
    for name, labels, taints in nodes:
        running = [r for r, pod in plugins.items() if pod_fits_node(pod, labels, taints)]
        assert running == ([f"nvidia-device-plugin-{name}"] if name else []), name


# -- a Karpenter pool served by the GPU Operator --------------------------------------------------


def test_plan_of_a_karpenter_pool_using_the_gpu_operator():
    """Its nodes do not opt out of the operator's operands; the other pools' nodes do."""
    from gpu_pool.plan.pool import plan_pools
    from gpu_pool.settings import load_settings
    from tests.support.settings import KARPENTER_OPERATOR

    plans = {p.name: p for p in plan_pools(load_settings(KARPENTER_OPERATOR, None))}
    train = plans["train"]
    assert (train.gpu_software, train.node_groups) == ("gpu-operator", ())
    assert train.chart is not None and train.chart.release == "gpu-operator"
    assert train.karpenter is not None
    assert train.karpenter.labels == {
        "accelerator": "nvidia",
        "workload": "train",
        "gpu-pool.io/pool": "train",
        "nvidia.com/gpu.present": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-l40s",
    }
    serve = plans["serve"]
    assert serve.karpenter is not None and serve.chart is not None
    assert serve.karpenter.labels["nvidia.com/gpu.deploy.operands"] == "false"
    assert serve.chart.release == "nvidia-device-plugin-serve"
    (group,) = plans["batch"].node_groups
    assert group.labels["nvidia.com/gpu.deploy.operands"] == "false"


def test_a_karpenter_pool_using_the_gpu_operator_synthesizes_its_node_pool_and_the_operator(
    karpenter_operator_template,
):
    releases = charts(karpenter_operator_template)
    assert sorted(releases) == [
        "cluster-autoscaler",
        "gpu-operator",
        "karpenter",
        "karpenter-crd",
        "nvidia-device-plugin-batch",
        "nvidia-device-plugin-serve",
    ]
    toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert helm_values(releases["gpu-operator"][1]) == {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "devicePlugin": {"enabled": True},
        "daemonsets": {"tolerations": toleration},
        "node-feature-discovery": {"worker": {"tolerations": toleration}},
    }
    node_pool = manifests(karpenter_operator_template)[("NodePool", "gpu-pool-train")]
    assert node_pool["spec"]["template"]["metadata"]["labels"] == {
        "accelerator": "nvidia",
        "workload": "train",
        "gpu-pool.io/pool": "train",
        "nvidia.com/gpu.present": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-l40s",
    }
    assert node_pool["spec"]["template"]["spec"]["taints"] == [GPU_TAINT]
    assert node_pool["spec"]["limits"] == {"nvidia.com/gpu": "32", "nodes": "8"}


def _operator_device_plugin_pod(values: dict[str, Any]) -> dict[str, Any]:
    """Where the GPU Operator runs its device plugin, modelled from NVIDIA's docs rather than
    from our plan: on every node node-feature-discovery finds a GPU on (our nodes say
    nvidia.com/gpu.present=true) unless it is labelled nvidia.com/gpu.deploy.operands=false,
    with the chart's daemonsets.tolerations."""
    assert values["devicePlugin"]["enabled"]
    expressions = [
        {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
        {"key": "nvidia.com/gpu.deploy.operands", "operator": "NotIn", "values": ["false"]},
    ]
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        },
        "tolerations": values["daemonsets"]["tolerations"],
    }


def test_with_the_gpu_operator_every_gpu_node_still_runs_exactly_one_device_plugin(
    karpenter_operator_template,
):
    """Nodes as each provisioner launches them, against every device plugin pod the template
    would create: the two charts' DaemonSets and the operator's."""
    from tests.support.cfn import node_of
    from tests.support.settings import KARPENTER_OPERATOR

    plugins = {
        release: (
            _operator_device_plugin_pod(helm_values(chart))
            if release == "gpu-operator"
            else deep_merge(DEVICE_PLUGIN_CHART_DEFAULTS, helm_values(chart))
        )
        for release, (_, chart) in charts(karpenter_operator_template).items()
        if release == "gpu-operator" or release.startswith("nvidia-device-plugin")
    }
    nodes = [
        (props["Labels"].get("gpu-pool.io/pool"), *node_of(props))
        for props in (
            r["Properties"]
            for r in resources(karpenter_operator_template, "AWS::EKS::Nodegroup").values()
        )
    ]
    for pool in synth_stack(KARPENTER_OPERATOR).pools:
        plan = pool.plan.karpenter
        if plan is not None:
            template = plan.node_pool()["spec"]["template"]
            taints = [{"value": "", **t} for t in template["spec"]["taints"]]
            nodes += [
                (plan.name, plan.launched_node_labels(t, "us-east-1a"), taints)
                for t in plan.instance_types
            ]
    assert sorted(name or "-" for name, _, _ in nodes) == ["-", "batch", "serve", "train", "train"]
    expected = {
        "train": ["gpu-operator"],
        "serve": ["nvidia-device-plugin-serve"],
        "batch": ["nvidia-device-plugin-batch"],
        None: [],  # the system nodes
    }
    for name, labels, taints in nodes:
        running = [r for r, pod in plugins.items() if pod_fits_node(pod, labels, taints)]
        assert running == expected[name], (name, labels)


def test_karpenter_only_app_has_no_gpu_node_group_no_tags_and_no_autoscaler(karpenter_template):
    nodegroups = resources(karpenter_template, "AWS::EKS::Nodegroup")
    assert [n["Properties"]["Labels"] for n in nodegroups.values()] == [
        {"gpu-pool.io/role": "system"}
    ]
    assert resources(karpenter_template, "Custom::GpuPoolAsgTags") == {}
    assert "cluster-autoscaler" not in charts(karpenter_template)
    assert only(resources(karpenter_template, "AWS::EKS::PodIdentityAssociation"))


def test_mixed_app_has_both_provisioners_and_one_pod_identity_agent(mixed_template):
    releases = charts(mixed_template)
    assert {"cluster-autoscaler", "karpenter-crd", "karpenter"} <= set(releases)
    nodegroups = resources(mixed_template, "AWS::EKS::Nodegroup").values()
    pools = sorted(n["Properties"]["Labels"].get("gpu-pool.io/pool", "-") for n in nodegroups)
    assert pools == ["-", "inference"]
    assert len(resources(mixed_template, "Custom::GpuPoolAsgTags")) == 1
    assert ("NodePool", "gpu-pool-training") in manifests(mixed_template)
    ((agent_id, _),) = [
        (k, r)
        for k, r in resources(mixed_template, "AWS::EKS::Addon").items()
        if r["Properties"]["AddonName"] == "eks-pod-identity-agent"
    ]
    assert agent_id.startswith("ClusterAutoscalerPodIdentityAgent")
    assert agent_id in releases["karpenter"][1]["DependsOn"]
    # The autoscaler's priorities name only node-group pools' ASGs.
    priorities = autoscaler_priorities(mixed_template)
    assert len([r for regexes in priorities.values() for r in regexes]) == 2


# -- as a library --------------------------------------------------------------------------------


def _imported(stack):
    from tests.support.user_app import imported_cluster

    return imported_cluster(stack)


def test_library_karpenter_on_an_imported_cluster_needs_its_security_group():
    import aws_cdk as cdk

    from gpu_pool import ConfigError, Karpenter

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, _ = _imported(stack)
    with pytest.raises(ConfigError) as raised:
        Karpenter(stack, "K", cluster=cluster)
    assert str(raised.value) == (
        "Karpenter 'S/K': cluster_security_group_id is required for an imported cluster (its nodes "
        "join that group): pass resourcesVpcConfig.clusterSecurityGroupId"
    )


def test_library_karpenter_needs_a_cluster_name_it_can_write_into_iam_conditions():
    import aws_cdk as cdk

    from gpu_pool import ConfigError, Karpenter
    from tests.support.user_app import user_cluster

    stack = cdk.Stack(unvalidated_app(), "S")
    with pytest.raises(ConfigError) as raised:
        Karpenter(stack, "K", cluster=user_cluster(stack))
    assert str(raised.value) == (
        "Karpenter 'S/K': the cluster's name is only known at deploy time; give the cluster a "
        "cluster_name (Karpenter's IAM condition keys contain it)"
    )


def test_library_pool_constructs_refuse_the_other_provisioners_pool():
    import aws_cdk as cdk

    from gpu_pool import ConfigError, GpuNodePool, Karpenter, KarpenterNodePool, PoolSettings

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = _imported(stack)
    with pytest.raises(ConfigError) as raised:
        GpuNodePool(
            stack,
            "P",
            cluster=cluster,
            subnets=[subnet],
            settings=PoolSettings(provisioner="karpenter"),
        )
    assert str(raised.value) == (
        "GpuNodePool 'S/P': pool.provisioner: 'karpenter'; GpuNodePool builds node groups for "
        "Cluster Autoscaler: render this pool with KarpenterNodePool"
    )
    karpenter = Karpenter(
        stack, "K", cluster=cluster, cluster_security_group_id="sg-0aaaaaaaaaaaaaaaa"
    )
    with pytest.raises(ConfigError) as raised:
        KarpenterNodePool(
            stack, "Q", karpenter=karpenter, subnets=[subnet], settings=PoolSettings()
        )
    assert str(raised.value) == (
        "KarpenterNodePool 'S/Q': pool.provisioner: 'cluster-autoscaler'; KarpenterNodePool "
        "renders pools with provisioner: karpenter"
    )


def test_library_karpenter_on_an_imported_cluster_uses_its_name_and_group():
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from gpu_pool import Karpenter, KarpenterNodePool, PoolSettings

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = _imported(stack)
    karpenter = Karpenter(
        stack,
        "K",
        cluster=cluster,
        kubernetes_version="1.35",
        cluster_security_group_id="sg-0aaaaaaaaaaaaaaaa",
    )
    KarpenterNodePool(
        stack,
        "Pool",
        karpenter=karpenter,
        subnets=[subnet],
        settings=PoolSettings(provisioner="karpenter"),
        tags={"team": "ml"},
    )
    template = Template.from_stack(stack)
    # An imported cluster's owner installs the Pod Identity agent.
    assert resources(template, "AWS::EKS::Addon") == {}
    node_class = manifests(template)[("EC2NodeClass", "gpu-pool-gpu")]["spec"]
    assert node_class["securityGroupSelectorTerms"] == [{"id": "sg-0aaaaaaaaaaaaaaaa"}]
    assert node_class["subnetSelectorTerms"] == [{"id": "subnet-0aaaaaaaaaaaaaaaa"}]
    assert node_class["tags"] == {"gpu-pool.io/pool": "gpu", "team": "ml"}
    _, controller = charts(template)["karpenter"]
    assert helm_values(controller)["settings"]["clusterName"] == "platform"
    assert helm_values(controller)["nodeSelector"] == {}
    assert _registry_warnings(stack) == [_registry_warning("arn:aws:iam::123456789012:role/k")]


def _registry_warnings(stack) -> list[str]:
    from aws_cdk.assertions import Annotations, Match

    found = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("oci://public.ecr.aws")
    )
    return [w.entry.data for w in found]


def _registry_warning(role: str) -> str:
    return (
        "cluster.existing.kubectl_provider_role_arn: Karpenter's charts come from "
        f"oci://public.ecr.aws, which the imported cluster's kubectl handler role {role} must "
        "log in to, or the deploy fails and rolls back: make sure that role has the AWS managed "
        "policy AmazonElasticContainerRegistryPublicReadOnly (a cluster created by aws_eks_v2 "
        "gives its own handler role that policy) "
        "[ack: gpu-pool:GP-CTRL-02]"
    )


def test_an_existing_cluster_warns_that_its_kubectl_role_must_log_in_to_public_ecr():
    from tests.support.settings import EXISTING

    settings = deep_merge(
        EXISTING,
        {
            "cluster": {"existing": {"cluster_security_group_id": "sg-0aaaaaaaaaaaaaaaa"}},
            "pool": {"provisioner": "karpenter"},
        },
    )
    assert _registry_warnings(synth_stack(settings)) == [
        _registry_warning("arn:aws:iam::123456789012:role/kubectl-handler")
    ]


def test_a_created_cluster_needs_no_registry_warning(karpenter_template):
    # Its own handler role has the policy, on the condition HasEcrPublic (the aws partition).
    assert _registry_warnings(synth_stack(KARPENTER)) == []
    handler_roles = [
        r["Properties"]["ManagedPolicyArns"]
        for r in resources(karpenter_template, "AWS::IAM::Role").values()
        if "AmazonElasticContainerRegistryPublicReadOnly" in json.dumps(r)
    ]
    assert len(handler_roles) == 1


@pytest.mark.parametrize("fixture", ["karpenter_template", "mixed_template"])
def test_cfn_lint_finds_nothing_in_karpenter_stacks(request, fixture):
    """./dev test lints the default app; these shapes are linted here, with the project's
    ignore list plus W3010: the KARPENTER settings list zones, so its VPC's subnets name them."""
    from tests.support.cfn_lint import cfn_lint

    template = request.getfixturevalue(fixture).to_json()
    assert cfn_lint(template, also_ignore=["W3010"]) == []
