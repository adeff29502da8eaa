"""What the plan layer renders for a pool, exactly: the Karpenter NodePool and EC2NodeClass,
the labels Karpenter's nodes carry, the GPU Operator chart and dcgm-exporter's scheduling. The
synth tests read these through a template; here they are checked without one (./dev mutate runs
these)."""

from __future__ import annotations

from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.model.versions import EFA_DEVICE_PLUGIN, NVIDIA_DEVICE_PLUGIN, NVIDIA_GPU_OPERATOR
from gpu_pool.plan import metrics
from gpu_pool.plan.pool import pascal_case, plan_pool, plan_pools
from gpu_pool.settings import PoolSettings, deep_merge, load_settings
from tests.support.chart_defaults import DCGM_EXPORTER_CHART_DEFAULTS

NODE_POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "gpu-pool-gpu"},
    "spec": {
        "template": {
            "metadata": {
                "labels": {
                    "accelerator": "nvidia",
                    "workload": "inference",
                    "gpu-pool.io/pool": "gpu",
                    "nvidia.com/gpu.present": "true",
                    "k8s.amazonaws.com/accelerator": "nvidia-mixed",
                    "nvidia.com/gpu.deploy.operands": "false",
                }
            },
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu-pool-gpu",
                },
                "requirements": [
                    {
                        "key": "karpenter.k8s.aws/instance-gpu-manufacturer",
                        "operator": "In",
                        "values": ["nvidia"],
                    },
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["g5.xlarge", "g5g.xlarge"],
                    },
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "amd64"]},
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand"],
                    },
                ],
                "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "true"}],
                "expireAfter": "720h",
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

NODE_CLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "gpu-pool-gpu"},
    "spec": {
        "amiSelectorTerms": [{"alias": "al2023@v20260714"}],
        "role": "role",
        "subnetSelectorTerms": [{"id": "subnet-1"}],
        "securityGroupSelectorTerms": [{"id": "sg-1"}],
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
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "tags": {"gpu-pool.io/pool": "gpu", "team": "ml"},
    },
}

BOTTLEROCKET_SPOT_SPEC = {
    "template": {
        "metadata": {
            "labels": {
                "accelerator": "nvidia",
                "workload": "inference",
                "gpu-pool.io/pool": "gpu",
                "nvidia.com/gpu.present": "true",
                "k8s.amazonaws.com/accelerator": "nvidia-a10g",
                "nvidia.com/gpu.deploy.operands": "false",
            }
        },
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "gpu-pool-gpu",
            },
            "requirements": [
                {
                    "key": "karpenter.k8s.aws/instance-gpu-manufacturer",
                    "operator": "In",
                    "values": ["nvidia"],
                },
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["g5.xlarge"],
                },
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
            ],
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "true"}],
            "expireAfter": "720h",
        },
    },
    "disruption": {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "5m",
        "budgets": [{"nodes": "1"}],
    },
    "limits": {"nvidia.com/gpu": "3", "nodes": "3"},
}

BOTTLEROCKET_DEVICES = [
    {
        "deviceName": "/dev/xvda",
        "ebs": {
            "volumeSize": "4Gi",
            "volumeType": "gp3",
            "encrypted": True,
            "deleteOnTermination": True,
            "kmsKeyID": "arn:aws:kms:us-east-1:123456789012:key/k",
        },
    },
    {
        "deviceName": "/dev/xvdb",
        "rootVolume": True,
        "ebs": {
            "volumeSize": "300Gi",
            "volumeType": "gp3",
            "encrypted": True,
            "deleteOnTermination": True,
            "kmsKeyID": "arn:aws:kms:us-east-1:123456789012:key/k",
        },
    },
]

LAUNCHED_LABELS = {
    "accelerator": "nvidia",
    "workload": "inference",
    "gpu-pool.io/pool": "gpu",
    "nvidia.com/gpu.present": "true",
    "k8s.amazonaws.com/accelerator": "nvidia-a10g",
    "nvidia.com/gpu.deploy.operands": "false",
    "karpenter.sh/nodepool": "gpu-pool-gpu",
    "karpenter.k8s.aws/ec2nodeclass": "gpu-pool-gpu",
    "karpenter.sh/capacity-type": "spot",
    "node.kubernetes.io/instance-type": "g5.xlarge",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
    "karpenter.k8s.aws/instance-family": "g5",
    "karpenter.k8s.aws/instance-gpu-count": "1",
    "karpenter.sh/registered": "true",
    "karpenter.sh/initialized": "true",
    "topology.kubernetes.io/zone": "us-east-1a",
}

OPERATOR_VALUES = {
    "driver": {"enabled": False},
    "toolkit": {"enabled": False},
    "devicePlugin": {"enabled": True},
    "daemonsets": {"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute"}]},
    "node-feature-discovery": {
        "worker": {"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute"}]}
    },
}

OPERATOR_PLUGIN_POD = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
                            {
                                "key": "nvidia.com/gpu.deploy.operands",
                                "operator": "NotIn",
                                "values": ["false"],
                            },
                        ]
                    }
                ]
            }
        }
    },
    "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute"}],
}


def karpenter_plan(**settings):
    plan = plan_pool(PoolSettings(provisioner="karpenter", **settings), "pool").karpenter
    assert plan is not None
    return plan


def test_a_node_pool_of_two_architectures():
    plan = karpenter_plan(instance_types=["g5.xlarge", ["g5g.xlarge"]])
    assert plan.node_pool() == NODE_POOL
    assert plan.ec2_node_class("role", ["subnet-1"], ["sg-1"], {"team": "ml"}) == NODE_CLASS


def test_a_bottlerocket_spot_pool_in_one_zone_with_its_own_key():
    plan = karpenter_plan(
        ami_family="BOTTLEROCKET",
        capacity_type="SPOT",
        zones=["us-east-1a"],
        disk_size_gib=300,
        max_size=3,
        volume_kms_key_arn="arn:aws:kms:us-east-1:123456789012:key/k",
        karpenter={"termination_grace_period": None},
    )
    assert plan.node_pool()["spec"] == BOTTLEROCKET_SPOT_SPEC
    node_class = plan.ec2_node_class("role", [], [], {})
    assert node_class["spec"]["blockDeviceMappings"] == BOTTLEROCKET_DEVICES
    assert plan.launched_node_labels(plan.instance_types[0], "us-east-1a") == LAUNCHED_LABELS


def test_an_ami_alias_set_is_used_and_a_gpu_limit_follows_the_largest_type():
    plan = karpenter_plan(
        instance_types=["g5.xlarge", "g5.12xlarge"],
        max_size=2,
        karpenter={"ami_alias": "al2023@v20250101"},
    )
    assert (plan.ami_alias, plan.gpu_limit) == ("al2023@v20250101", 8)
    assert karpenter_plan(instance_types=[]).gpu_limit == 0


def auto_mode_plan(**settings):
    plan = plan_pool(PoolSettings(provisioner="auto-mode", **settings), "pool").auto_mode
    assert plan is not None
    return plan


def test_an_auto_mode_node_class_takes_the_pools_disk_key_subnets_and_tags():
    """Its fields as the EKS user guide's NodeClass has them (automode/create-node-class.adoc);
    the API server judges it in tests/e2e/test_custom_resources.py."""
    plan = auto_mode_plan(
        name="infer",
        disk_size_gib=120,
        volume_kms_key_arn="arn:aws:kms:us-west-2:123456789012:key/k",
    )
    node_class = plan.node_class("role", ["subnet-1", "subnet-2"], ["sg-1"], {"team": "ml"})
    assert node_class == {
        "apiVersion": "eks.amazonaws.com/v1",
        "kind": "NodeClass",
        "metadata": {"name": "gpu-pool-infer"},
        "spec": {
            "role": "role",
            "subnetSelectorTerms": [{"id": "subnet-1"}, {"id": "subnet-2"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "ephemeralStorage": {
                "size": "120Gi",
                "kmsKeyID": "arn:aws:kms:us-west-2:123456789012:key/k",
            },
            "tags": {"gpu-pool.io/pool": "infer", "team": "ml"},
        },
    }
    # Without a key of its own, EBS's default key: no kmsKeyID.
    default = auto_mode_plan().node_class("role", ["subnet-1"], ["sg-1"], {})
    assert default["spec"]["ephemeralStorage"] == {"size": "200Gi"}


def test_an_auto_mode_node_carries_the_labels_auto_mode_sets():
    plan = auto_mode_plan(name="infer", instance_types=["g6e.12xlarge"])
    assert plan.launched_node_labels(plan.instance_types[0], "us-west-2a") == {
        "accelerator": "nvidia",
        "workload": "inference",
        "gpu-pool.io/pool": "infer",
        "nvidia.com/gpu.present": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-l40s",
        "nvidia.com/gpu.deploy.operands": "false",
        "karpenter.sh/nodepool": "gpu-pool-infer",
        "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": "g6e.12xlarge",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "eks.amazonaws.com/instance-gpu-manufacturer": "nvidia",
        "topology.kubernetes.io/zone": "us-west-2a",
        "eks.amazonaws.com/nodeclass": "gpu-pool-infer",
        "eks.amazonaws.com/compute-type": "auto",
        "eks.amazonaws.com/instance-family": "g6e",
        "eks.amazonaws.com/instance-gpu-count": "4",
    }


def test_an_auto_mode_gpu_limit_follows_the_largest_type():
    plan = auto_mode_plan(instance_types=["g5.xlarge", "g5.12xlarge"], max_size=2)
    assert plan.gpu_limit == 8
    assert auto_mode_plan(instance_types=[]).gpu_limit == 0


def test_a_karpenter_gpu_operator_pool_leaves_its_nodes_to_the_operator():
    labels = karpenter_plan(gpu_software="gpu-operator").labels
    assert "nvidia.com/gpu.deploy.operands" not in labels


def test_the_gpu_operator_chart_reaches_the_pools_taints():
    taint = {"key": "a", "value": "b", "effect": "NoExecute"}
    chart = plan_pool(PoolSettings(gpu_software="gpu-operator", taints=[taint])).chart
    assert chart is not None
    assert (chart.construct_id, chart.pin, chart.version, chart.release) == (
        "GpuOperator",
        NVIDIA_GPU_OPERATOR,
        NVIDIA_GPU_OPERATOR.version,
        "gpu-operator",
    )
    assert chart.values == OPERATOR_VALUES
    assert chart.device_plugin_pod == OPERATOR_PLUGIN_POD


def test_with_cloudwatch_metrics_the_gpu_operator_runs_no_exporter_of_its_own():
    """The CloudWatch add-on runs its own DCGM exporter on the operator's nodes too; two
    exporters would each start a DCGM host engine and contend for the GPUs' profiling metrics.
    With the other choices the operator keeps its exporter (dcgm-exporter's chart stays off its
    nodes)."""
    taint = {"key": "a", "value": "b", "effect": "NoExecute"}
    for gpu, operator_exporter in (
        ("cloudwatch", {"dcgmExporter": {"enabled": False}}),
        ("dcgm-exporter", {}),
        ("none", {}),
    ):
        settings = {"pool": {"gpu_software": "gpu-operator", "taints": [taint]}}
        (plan,) = plan_pools(load_settings({**settings, "metrics": {"gpu": gpu}}, None))
        assert plan.chart is not None
        assert plan.chart.values == {**OPERATOR_VALUES, **operator_exporter}, gpu


def test_on_bottlerocket_the_gpu_operator_runs_no_device_plugin():
    settings = PoolSettings(gpu_software="gpu-operator", ami_family="BOTTLEROCKET")
    chart = plan_pool(settings).chart
    assert chart is not None
    assert chart.values["devicePlugin"] == {"enabled": False}
    assert chart.device_plugin_pod is None


def test_the_device_plugin_chart_is_the_pinned_one():
    chart = plan_pool(PoolSettings()).chart
    assert chart is not None
    assert (chart.construct_id, chart.pin, chart.release) == (
        "DevicePlugin",
        NVIDIA_DEVICE_PLUGIN,
        "nvidia-device-plugin-gpu",
    )


def test_an_empty_entry_is_reported_and_the_next_one_still_planned():
    plan = plan_pool(PoolSettings(instance_types=[[], "g6.xlarge"]))
    assert [str(f) for f in plan.unresolved] == [
        "pool.instance_types[0]: empty list; name at least one instance type"
    ]
    assert [g.construct_id for g in plan.node_groups] == ["G6Xlarge"]


def test_pascal_case_keeps_capitals():
    assert pascal_case("MyPool-us-east-1a") == "MyPoolUsEast1a"


def test_dcgm_exporter_values_tolerate_each_pool_taint_once_and_select_gpu_nodes():
    """Two pools sharing the GPU taint: one toleration per distinct taint key and effect (any
    value), the affinity on the GPU label and the operator's opt-out, a ServiceMonitor as asked."""
    settings = load_settings(
        {
            "pools": {
                "a": {"instance_types": ["g6.xlarge"]},
                "b": {
                    "instance_types": ["p5.48xlarge"],
                    "labels": {"workload": "training"},
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "training", "effect": "NoExecute"},
                    ],
                },
            }
        },
        None,
    )
    expressions = [
        {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
        {"key": "nvidia.com/gpu.deploy.operands", "operator": "In", "values": ["false"]},
    ]
    terms = {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": terms}
    for service_monitor in (True, False):
        tolerations = metrics.dcgm_exporter_tolerations(plan_pools(settings))
        assert metrics.dcgm_exporter_values(service_monitor, tolerations) == {
            "affinity": {"nodeAffinity": affinity},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
            ],
            "serviceMonitor": {"enabled": service_monitor},
        }


def _exporter_values(plans):
    return metrics.dcgm_exporter_values(False, metrics.dcgm_exporter_tolerations(plans))


def test_the_exporter_reaches_karpenter_nodes_too():
    settings = load_settings(
        {
            "pools": {
                "ng": {"instance_types": ["g6.xlarge"], "labels": {"workload": "ng"}},
                "kp": {
                    "provisioner": "karpenter",
                    "instance_types": ["g6e.xlarge", "p5.48xlarge"],
                    "labels": {"workload": "kp"},
                    "taints": [{"key": "team", "value": "ml", "effect": "NoSchedule"}],
                },
            }
        },
        None,
    )
    plans = plan_pools(settings)
    pod = deep_merge(DCGM_EXPORTER_CHART_DEFAULTS, _exporter_values(plans))
    shapes = [(shape, plan) for plan in plans for shape in plan.node_shapes]
    assert len(shapes) == 3
    for shape, plan in shapes:
        assert pod_fits_node(pod, shape.labels, plan.node_taints()), shape.description


def test_the_exporter_reaches_auto_mode_nodes_too():
    """Auto Mode's nodes carry the pool's labels (GPU present, operator's operands off) and
    taints like any other pool's, so the exporter runs there as on a Bottlerocket node group."""
    settings = load_settings(
        {
            "pools": {
                "am": {
                    "provisioner": "auto-mode",
                    "instance_types": ["g6e.xlarge"],
                    "labels": {"workload": "am"},
                    "taints": [{"key": "team", "value": "ml", "effect": "NoSchedule"}],
                },
            }
        },
        None,
    )
    (plan,) = plan_pools(settings)
    pod = deep_merge(DCGM_EXPORTER_CHART_DEFAULTS, _exporter_values([plan]))
    (shape,) = plan.node_shapes
    assert shape.labels["eks.amazonaws.com/compute-type"] == "auto"
    assert pod_fits_node(pod, shape.labels, plan.node_taints())


def test_a_mig_pool_gives_the_gpu_operator_its_strategy_and_mig_manager_config():
    """The MIG manager applies the layout only when enabled and handed its config; every GPU
    starts with MIG off until the node's label asks for the layout."""
    settings = PoolSettings(
        instance_types=["p5.48xlarge"],
        gpu_software="gpu-operator",
        sharing={"mode": "mig", "strategy": "single", "profile": "1g.10gb"},
    )
    plan = plan_pool(settings)
    assert plan.chart is not None and plan.sharing is not None
    assert plan.chart.values["mig"] == {"strategy": "single"}
    assert plan.chart.values["migManager"] == {
        "enabled": True,
        "config": {
            "create": True,
            "name": "gpu-pool-mig-parted-config",
            "default": "all-disabled",
            "data": plan.sharing.mig_parted_config(),
        },
    }


def test_an_efa_node_groups_zero_node_template_advertises_its_efa_interfaces_and_hugepages():
    """CA scales an EFA pool up from zero only if the template has what EFA pods request: one
    interface per network card (32 on p5.48xlarge) and the EFA driver's 5128 x 2 MiB
    hugepages (EKS UG ml/node-efa)."""
    plan = plan_pool(
        PoolSettings(name="t", instance_types=["p5.48xlarge"], zones=["us-east-1a"], efa=True)
    )
    (group,) = plan.node_groups
    prefix = "k8s.io/cluster-autoscaler/node-template/resources/"
    assert {k: v for k, v in group.node_template_tags().items() if k.startswith(prefix)} == {
        f"{prefix}nvidia.com/gpu": "8",
        f"{prefix}ephemeral-storage": "200Gi",
        f"{prefix}vpc.amazonaws.com/efa": "32",
        f"{prefix}hugepages-2Mi": "10256Mi",
    }
    (plain,) = plan_pool(PoolSettings(instance_types=["p5.48xlarge"])).node_groups
    assert not any("efa" in k or "hugepages" in k for k in plain.node_template_tags())


def test_an_efa_node_class_selects_its_placement_group_by_name():
    """Only an EFA pool's NodeClass names a placement group (Karpenter's placementGroupSelector);
    every other key is the pool's as without one."""
    plan = karpenter_plan(instance_types=["p5.48xlarge"], zones=["us-east-1a"], efa=True)
    plain = plan.ec2_node_class("role", ["subnet-1"], ["sg-1"], {})
    placed = plan.ec2_node_class("role", ["subnet-1"], ["sg-1"], {}, placement_group="train-pg")
    assert placed["spec"] == {**plain["spec"], "placementGroupSelector": {"name": "train-pg"}}
    assert "placementGroupSelector" not in plain["spec"]


def test_an_efa_pool_gets_its_own_efa_device_plugin_and_turns_mofed_off():
    """One EFA plugin release per EFA pool, on its nodes only and tolerating its taints (after
    the chart's own CriticalAddonsOnly); the NVIDIA plugin's MOFED mounts off there. A pool
    without EFA has neither."""
    team = {"key": "team", "value": "ml", "effect": "NoExecute"}
    plan = plan_pool(
        PoolSettings(
            name="train",
            instance_types=["p5.48xlarge"],
            zones=["us-east-1a"],
            efa=True,
            taints=[team],
        )
    )
    tolerations = [{"key": "team", "operator": "Exists", "effect": "NoExecute"}]
    chart = plan.efa_chart
    assert chart is not None
    assert (chart.construct_id, chart.pin, chart.version, chart.release) == (
        "EfaDevicePlugin",
        EFA_DEVICE_PLUGIN,
        EFA_DEVICE_PLUGIN.version,
        "aws-efa-k8s-device-plugin-train",
    )
    assert chart.values == {
        "nodeSelector": {"gpu-pool.io/pool": "train"},
        "tolerations": tolerations,
    }
    assert chart.device_plugin_pod == {
        "nodeSelector": {"gpu-pool.io/pool": "train"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, *tolerations],
    }
    assert plan.chart is not None and plan.chart.values["mofedEnabled"] is False
    plain = plan_pool(PoolSettings(instance_types=["p5.48xlarge"]))
    assert plain.efa_chart is None
    assert plain.chart is not None and "mofedEnabled" not in plain.chart.values


def test_an_efa_pool_whose_types_do_not_resolve_plans_no_interfaces():
    """Its unknown type is the rule's error to report; the plan invents no EFA interface."""
    plan = plan_pool(PoolSettings(instance_types=["x9.huge"], zones=["us-east-1a"], efa=True))
    assert plan.unresolved and plan.capacity.efa_interfaces == 0
