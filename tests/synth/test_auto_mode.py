"""EKS Auto Mode as a pool's provisioner: the cluster's compute, each pool's NodePool,
NodeClass, node role and access entry, and how they sit beside the other provisioners. The API
server judges the NodePools and NodeClasses in tests/e2e/test_custom_resources.py."""

from __future__ import annotations

import json

import pytest

from gpu_pool.model.scheduling import pod_fits_node
from tests.support.cfn import only, render, resources, synth, synth_stack, unvalidated_app
from tests.support.settings import KMS_KEY, MIXED_AUTO_MODE

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
LABELS = {
    "accelerator": "nvidia",
    "gpu-pool.io/pool": "inference",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.deploy.operands": "false",
}


def manifests(template) -> dict[tuple[str, str], dict]:
    """(kind, name) -> the manifest as kubectl applies it, without aws-cdk-lib's prune label."""
    found = {}
    for resource in resources(template, MANIFEST).values():
        for manifest in json.loads(render(resource["Properties"]["Manifest"])):
            manifest["metadata"].pop("labels", None)
            found[(manifest["kind"], manifest["metadata"]["name"])] = manifest
    return found


def _cluster(template) -> dict:
    return only(resources(template, "AWS::EKS::Cluster"))[1]["Properties"]


def test_the_cluster_gets_auto_mode_compute_without_built_in_node_pools(auto_mode_template):
    cluster = _cluster(auto_mode_template)
    # No built-in pools and no node role: every NodePool is a gpu-pool pool with its NodeClass.
    assert cluster["ComputeConfig"] == {"Enabled": True, "NodePools": []}
    # EKS turns Auto Mode on only with block storage and load balancing together.
    assert cluster["StorageConfig"] == {"BlockStorage": {"Enabled": True}}
    assert cluster["KubernetesNetworkConfig"]["ElasticLoadBalancing"] == {"Enabled": True}
    # The system node group stays: controllers and add-ons run there, as in every app.
    groups = resources(auto_mode_template, "AWS::EKS::Nodegroup").values()
    assert [g["Properties"]["Labels"] for g in groups] == [{"gpu-pool.io/role": "system"}]


def test_a_cluster_without_auto_mode_pools_keeps_auto_mode_off(default_template):
    assert _cluster(default_template)["ComputeConfig"] == {"Enabled": False}


def test_inference_pool_node_pool_field_by_field(auto_mode_template):
    assert manifests(auto_mode_template)[("NodePool", "gpu-pool-inference")] == {
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
                        "group": "eks.amazonaws.com",
                        "kind": "NodeClass",
                        "name": "gpu-pool-inference",
                    },
                    "requirements": [
                        {
                            "key": "eks.amazonaws.com/instance-gpu-manufacturer",
                            "operator": "In",
                            "values": ["nvidia"],
                        },
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": ["g6.xlarge", "g6e.xlarge"],
                        },
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                        {
                            "key": "topology.kubernetes.io/zone",
                            "operator": "In",
                            "values": ["us-east-1a", "us-east-1b"],
                        },
                    ],
                    "taints": [GPU_TAINT],
                    # Auto Mode's own default: the project's 720h is beyond its 21 days.
                    "expireAfter": "336h",
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


def _node_role(template, pool: str) -> str:
    (role,) = [
        k for k in resources(template, "AWS::IAM::Role") if k.startswith(f"GpuPool{pool}NodeRole")
    ]
    return role


def test_spot_pool_node_class_field_by_field(auto_mode_template):
    node_class = manifests(auto_mode_template)[("NodeClass", "gpu-pool-spot")]
    subnets = node_class["spec"].pop("subnetSelectorTerms")
    assert len(subnets) == 2 and all(s["id"].startswith("<Ref:VpcPrivateSubnet") for s in subnets)
    assert node_class == {
        "apiVersion": "eks.amazonaws.com/v1",
        "kind": "NodeClass",
        "metadata": {"name": "gpu-pool-spot"},
        "spec": {
            "role": f"<Ref:{_node_role(auto_mode_template, 'Spot')}>",
            "securityGroupSelectorTerms": [
                {"id": "<GetAtt:ClusterEB0386A7.ClusterSecurityGroupId>"}
            ],
            "ephemeralStorage": {"size": "300Gi", "kmsKeyID": KMS_KEY},
            "tags": {"gpu-pool.io/pool": "spot"},
        },
    }
    node_pool = manifests(auto_mode_template)[("NodePool", "gpu-pool-spot")]
    assert node_pool["spec"]["template"]["spec"]["expireAfter"] == "168h"


def test_each_pool_role_joins_through_an_ec2_access_entry_with_the_auto_node_policy(
    auto_mode_template,
):
    role = _node_role(auto_mode_template, "Inference")
    (entry,) = [
        r["Properties"]
        for r in resources(auto_mode_template, "AWS::EKS::AccessEntry").values()
        if r["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [role, "Arn"]}
    ]
    assert entry["Type"] == "EC2"
    assert render(entry["AccessPolicies"]) == [
        {
            "AccessScope": {"Type": "cluster"},
            "PolicyArn": "arn:<Ref:AWS::Partition>:eks::aws:cluster-access-policy/AmazonEKSAutoNodePolicy",
        }
    ]
    policies = resources(auto_mode_template, "AWS::IAM::Role")[role]["Properties"][
        "ManagedPolicyArns"
    ]
    assert sorted(render(p).rsplit("/", 1)[-1] for p in policies) == [
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonEKSWorkerNodeMinimalPolicy",
    ]


def test_an_auto_mode_only_app_installs_no_plugin_no_karpenter_and_no_autoscaler(
    auto_mode_template,
):
    """Auto Mode runs the NVIDIA driver and device plugin itself."""
    assert resources(auto_mode_template, HELM) == {}
    assert not [k for k in resources(auto_mode_template, "AWS::SQS::Queue")]


def test_node_classes_wait_for_their_access_entry_and_node_pools_for_their_node_class(
    auto_mode_template,
):
    template = auto_mode_template.to_json()["Resources"]
    (node_class,) = [k for k in template if k.startswith("GpuPoolInferenceNodeClass")]
    (node_pool,) = [k for k in template if k.startswith("GpuPoolInferenceNodePool")]
    (entry,) = [k for k in template if k.startswith("GpuPoolInferenceNodeAccessEntry")]
    assert entry in template[node_class]["DependsOn"]
    assert node_class in template[node_pool]["DependsOn"]
    # The first launch may follow the NodeClass at once: the cluster role allows it by then.
    assert _cluster_role_policy(auto_mode_template) in template[node_class]["DependsOn"]


# The EKS user guide's statement for the cluster role when a NodeClass has tags of its own
# ("Amazon EKS Auto Mode cluster IAM role", "Custom AWS tags for EKS Auto resources"):
# AmazonEKSComputePolicy lets Auto Mode launch only with EKS's own tag keys, and every NodeClass
# of a created cluster carries gpu-pool.io/pool.
TAGS_STATEMENT = {
    "Effect": "Allow",
    "Action": ["ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate"],
    "Resource": "*",
    "Condition": {
        "StringEquals": {
            "aws:RequestTag/eks:eks-cluster-name": "${aws:PrincipalTag/eks:eks-cluster-name}"
        },
        "StringLike": {
            "aws:RequestTag/eks:kubernetes-node-class-name": "*",
            "aws:RequestTag/eks:kubernetes-node-pool-name": "*",
        },
    },
}


def _key_statements(key: str) -> list[dict]:
    """The user guide's key policy for the cluster role (auto-kms, "Configure the key policy"),
    as the role's own policy on the key."""
    return [
        {
            "Effect": "Allow",
            "Action": [
                "kms:Encrypt",
                "kms:Decrypt",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:DescribeKey",
            ],
            "Resource": key,
        },
        {
            "Effect": "Allow",
            "Action": ["kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"],
            "Resource": key,
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
    ]


def _cluster_role_policy(template) -> str:
    """The one inline policy on the cluster's role (its managed policies aside)."""
    role = _cluster(template)["RoleArn"]["Fn::GetAtt"][0]
    (policy,) = [
        k
        for k, p in resources(template, "AWS::IAM::Policy").items()
        if p["Properties"]["Roles"] == [{"Ref": role}]
    ]
    return policy


def test_the_cluster_role_may_launch_with_the_node_class_tags_and_use_the_volume_key(
    auto_mode_template,
):
    """Three pools, one of them with a customer key: the tags statement once, the key's two."""
    policy = resources(auto_mode_template, "AWS::IAM::Policy")[
        _cluster_role_policy(auto_mode_template)
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statements == [TAGS_STATEMENT, *_key_statements(KMS_KEY)]


def test_the_docs_auto_mode_example_synthesizes_with_the_tags_statement(tmp_path):
    """docs/provisioners.md's Auto Mode example, as a user copies it into gpu-pool.yaml."""
    from tests.support.docs_examples import app_settings, settings_example

    example = app_settings(settings_example("docs/provisioners.md", "The Auto Mode path"), tmp_path)
    assert example["pools"]["inference"]["provisioner"] == "auto-mode"
    template = synth(example)
    node_class = manifests(template)[("NodeClass", "gpu-pool-inference")]
    assert node_class["spec"]["tags"] == {"gpu-pool.io/pool": "inference"}
    node_pool = manifests(template)[("NodePool", "gpu-pool-inference")]
    assert node_pool["spec"]["template"]["spec"]["expireAfter"] == "168h"
    policy = resources(template, "AWS::IAM::Policy")[_cluster_role_policy(template)]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [TAGS_STATEMENT]


def test_a_gpu_pod_for_an_auto_mode_pool_fits_its_nodes_and_no_other_pools():
    """The scheduling model over every pool of a mixed app: a pod with the auto pool's
    selector and tolerations fits its node shapes only; a CPU pod fits no GPU node."""
    plans = {pool.plan.name: pool.plan for pool in synth_stack(MIXED_AUTO_MODE).pools}
    auto = plans["auto"]
    pod = {
        "nodeSelector": auto.workload_node_selector,
        "tolerations": auto.workload_tolerations,
    }
    fits = {
        name: [pod_fits_node(pod, s.labels, plan.node_taints()) for s in plan.node_shapes]
        for name, plan in plans.items()
    }
    assert fits == {"serve": [False], "batch": [False], "auto": [True]}
    cpu_pod: dict = {}
    assert not any(
        pod_fits_node(cpu_pod, s.labels, plan.node_taints())
        for plan in plans.values()
        for s in plan.node_shapes
    )


def test_in_a_mixed_app_no_device_plugin_reaches_auto_mode_nodes(mixed_auto_mode_template):
    """Auto Mode's nodes run its own plugin; the other pools' plugins must stay off them."""
    stack = synth_stack(MIXED_AUTO_MODE)
    plans = {pool.plan.name: pool.plan for pool in stack.pools}
    auto = plans["auto"]
    assert auto.chart is None
    plugins = [p.chart.device_plugin_pod for p in plans.values() if p.chart is not None]
    assert len(plugins) == 2
    for shape in auto.node_shapes:
        assert not any(pod_fits_node(p, shape.labels, auto.node_taints()) for p in plugins)
    # One Auto Mode NodePool, one Karpenter NodePool, and the node-group pool's groups, whose
    # Cluster Autoscaler priorities are a ConfigMap of their own.
    kinds = sorted(kind for kind, _ in manifests(mixed_auto_mode_template))
    assert kinds == ["ConfigMap", "EC2NodeClass", "NodeClass", "NodePool", "NodePool"]


@pytest.mark.parametrize("fixture", ["auto_mode_template", "mixed_auto_mode_template"])
def test_cfn_lint_finds_nothing_in_auto_mode_stacks(request, fixture):
    from tests.support.cfn_lint import cfn_lint

    template = request.getfixturevalue(fixture).to_json()
    assert cfn_lint(template, also_ignore=["W3010"]) == []


def test_library_auto_mode_pool_on_a_users_auto_mode_cluster():
    """A user's own cluster with Auto Mode compute: the pool takes the cluster security group."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks
    from aws_cdk.assertions import Template
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    from gpu_pool import AutoModeNodePool, PoolSettings

    stack = cdk.Stack(unvalidated_app(), "User")
    cluster = eks.Cluster(
        stack,
        "Cluster",
        cluster_name="ml",
        version=eks.KubernetesVersion.V1_35,
        default_capacity_type=eks.DefaultCapacityType.AUTOMODE,
        compute=eks.ComputeConfig(node_pools=["system"]),
        kubectl_provider_options=eks.KubectlProviderOptions(
            kubectl_layer=KubectlV35Layer(stack, "KubectlLayer")
        ),
    )
    pool = AutoModeNodePool(
        stack,
        "Pool",
        cluster=cluster,
        subnets=cluster.vpc.private_subnets,
        settings=PoolSettings(name="infer", provisioner="auto-mode", instance_types=["g6.xlarge"]),
        tags={"team": "ml"},
    )
    assert pool.workload_node_selector == {"gpu-pool.io/pool": "infer"}
    found = manifests(Template.from_stack(stack))
    node_class = found[("NodeClass", "gpu-pool-infer")]["spec"]
    cluster_id = stack.get_logical_id(cluster.node.default_child)
    assert node_class["securityGroupSelectorTerms"] == [
        {"id": f"<GetAtt:{cluster_id}.ClusterSecurityGroupId>"}
    ]
    assert node_class["tags"] == {"gpu-pool.io/pool": "infer", "team": "ml"}
    template = Template.from_stack(stack)
    policy = resources(template, "AWS::IAM::Policy")[_cluster_role_policy(template)]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [TAGS_STATEMENT]


def test_on_an_imported_cluster_the_node_class_has_only_the_users_tags_and_warnings_say_why():
    """The app does not change the role of a cluster it did not create: the NodeClass leaves
    out gpu-pool.io/pool (nothing reads it), and for the user's own tags and customer key the
    pool warns with what that role needs."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Annotations, Match, Template

    from gpu_pool import AutoModeNodePool, PoolSettings
    from tests.support.user_app import imported_cluster

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = imported_cluster(stack)
    settings = PoolSettings(name="infer", provisioner="auto-mode", volume_kms_key_arn=KMS_KEY)
    args = {"cluster": cluster, "subnets": [subnet], "security_group_id": "sg-0123456789abcdef0"}
    AutoModeNodePool(
        stack,
        "Bare",
        settings=settings.model_copy(update={"name": "bare", "volume_kms_key_arn": None}),
        **args,
    )
    AutoModeNodePool(stack, "Tagged", settings=settings, tags={"team": "ml"}, **args)
    template = Template.from_stack(stack)
    found = manifests(template)
    assert found[("NodeClass", "gpu-pool-bare")]["spec"]["tags"] == {}
    assert found[("NodeClass", "gpu-pool-infer")]["spec"]["tags"] == {"team": "ml"}
    assert resources(template, "AWS::IAM::Policy") == {}
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("GP-AUTO"))
    # The exact messages: tests/unit/test_auto_mode_checks.py.
    assert [(w.id, w.entry.data.split(":", 1)[0], w.entry.data[-11:-1]) for w in warnings] == [
        ("/S/Tagged", "tags", "GP-AUTO-12"),
        ("/S/Tagged", "pool.volume_kms_key_arn", "GP-AUTO-13"),
    ]


def test_a_users_cluster_with_an_imported_role_is_left_alone():
    """The app changes only a cluster role it creates: an eks.Cluster given a role from
    elsewhere is treated as an imported cluster."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks
    from aws_cdk import aws_iam as iam
    from aws_cdk.assertions import Template
    from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

    from gpu_pool import AutoModeNodePool, PoolSettings

    stack = cdk.Stack(unvalidated_app(), "User")
    cluster = eks.Cluster(
        stack,
        "Cluster",
        version=eks.KubernetesVersion.V1_35,
        role=iam.Role.from_role_arn(stack, "Role", "arn:aws:iam::123456789012:role/eks-auto"),
        default_capacity_type=eks.DefaultCapacityType.AUTOMODE,
        compute=eks.ComputeConfig(node_pools=[]),
        kubectl_provider_options=eks.KubectlProviderOptions(
            kubectl_layer=KubectlV35Layer(stack, "KubectlLayer")
        ),
    )
    pool = AutoModeNodePool(
        stack,
        "Pool",
        cluster=cluster,
        subnets=cluster.vpc.private_subnets,
        settings=PoolSettings(name="infer", provisioner="auto-mode"),
    )
    assert pool.cluster_role_policy is None
    found = manifests(Template.from_stack(stack))
    assert found[("NodeClass", "gpu-pool-infer")]["spec"]["tags"] == {}


def test_library_constructs_name_the_construct_for_an_auto_mode_pool():
    import aws_cdk as cdk

    from gpu_pool import AutoModeNodePool, ConfigError, GpuNodePool, PoolSettings
    from tests.support.user_app import imported_cluster

    stack = cdk.Stack(unvalidated_app(), "S")
    cluster, subnet = imported_cluster(stack)
    auto = PoolSettings(provisioner="auto-mode")
    with pytest.raises(ConfigError) as raised:
        GpuNodePool(stack, "P", cluster=cluster, subnets=[subnet], settings=auto)
    assert str(raised.value) == (
        "GpuNodePool 'S/P': pool.provisioner: 'auto-mode'; GpuNodePool builds node groups for "
        "Cluster Autoscaler: render this pool with AutoModeNodePool"
    )
    with pytest.raises(ConfigError) as raised:
        AutoModeNodePool(stack, "Q", cluster=cluster, subnets=[subnet], settings=auto)
    assert str(raised.value) == (
        "AutoModeNodePool 'S/Q': pool: AutoModeNodePool needs security_group_id for an imported "
        "cluster (its cluster security group: aws eks describe-cluster, "
        "resourcesVpcConfig.clusterSecurityGroupId)"
    )
    with pytest.raises(ConfigError) as raised:
        AutoModeNodePool(stack, "R", cluster=cluster, subnets=[subnet], settings=PoolSettings())
    assert str(raised.value) == (
        "AutoModeNodePool 'S/R': pool.provisioner: 'cluster-autoscaler'; AutoModeNodePool "
        "renders pools with provisioner: auto-mode"
    )


def test_an_auto_mode_pool_in_a_zone_and_a_local_zone_is_refused_with_one_message():
    """#53 item 13: an Availability Zone beside a Local Zone, with the zone lookup cached (the
    Local Zone in it, as for an opted-in account): the synth stops with the Auto Mode rule
    alone, before the pool's Local Zone subnet (which a Karpenter pool of the same zones gets)
    is built."""
    from gpu_pool.cdk.stack import GpuPoolStack
    from gpu_pool.settings import ConfigError, load_settings
    from tests.support.looked_up import LOOKUP

    zones = ["us-east-1a", "us-east-1-dfw-2a"]
    pool = {"provisioner": "auto-mode", "instance_types": ["g6e.xlarge"], "zones": zones}
    settings = {
        "account": "123456789012",
        "region": "us-east-1",
        "cluster": {"auto_mode": True},
        "pools": {"gpu": pool},
    }
    with pytest.raises(ConfigError) as refused:
        GpuPoolStack(
            unvalidated_app(context=LOOKUP), "GpuPool", settings=load_settings(settings, None)
        )
    assert str(refused.value).splitlines() == [
        "pools.gpu.zones: us-east-1-dfw-2a: a Local Zone, where EKS Auto Mode cannot run nodes "
        '(EKS user guide, "Manage compute resources by using nodes", Compare compute options: '
        "Auto Mode cannot be deployed to an AWS Local Zone): its NodeClass would get the zone's "
        "subnet and no node would launch; use provisioner: cluster-autoscaler or karpenter "
        "there, or list Availability Zones only"
    ]
