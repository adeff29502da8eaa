"""The NVIDIA DRA driver (`gpu_software: dra-driver`): its refusals, one case per rule with the
exact message users read, the one-advertiser-per-node rule with the driver's kubelet plugin,
and the plan of the cluster's one release (no CDK here; tests/synth/test_dra.py synthesizes
and renders it)."""

from dataclasses import replace

import pytest

from gpu_pool.checks import between_pools
from gpu_pool.checks.between_pools import check_one_device_plugin_per_node
from gpu_pool.model.labels import OPERANDS_LABEL
from gpu_pool.model.scheduling import pod_fits_node
from gpu_pool.plan.dra import dra_driver_chart
from gpu_pool.plan.pool import plan_pool
from gpu_pool.settings import PoolSettings
from tests.support import rules
from tests.support.rules import documented

DRA_SOFTWARE = {"gpu_software": "dra-driver"}
# A node-group DRA pool keeps a node (GP-DRA-10: Cluster Autoscaler cannot scale it from zero).
DRA = {**DRA_SOFTWARE, "min_size": 1, "desired_size": 1}

KARPENTER_TYPE_REFUSED = (
    "E",
    "pool.instance_types[0]: '{}' with gpu_software: dra-driver and provisioner: karpenter: "
    "Karpenter 1.15.0 has no DRA device metadata for it (pkg/providers/drametadata; a new type "
    "needs a new Karpenter release), so it never launches one for a pod's GPU claim: use a type "
    "it describes (g4dn, g5, g5g, g6, g6e, g6f, gr6, gr6f, p3dn, p4d, p4de, p5, p5e, p5en, "
    "p6-b200, p6-b300), or provisioner: cluster-autoscaler",
)
ULTRASERVER_ON_KARPENTER = (
    "E",
    "pool.provisioner: karpenter with p6e-gb200.36xlarge: EKS runs UltraServers on managed or "
    "self-managed node groups only, not on Karpenter or EKS Auto Mode (EKS UG \"Use P6e-GB200 "
    "UltraServers with Amazon EKS\"): use provisioner: cluster-autoscaler",
)
KARPENTER = {"provisioner": "karpenter", **DRA_SOFTWARE}
BOTTLEROCKET_REFUSED = (
    "E",
    "pool.gpu_software: 'dra-driver' on Bottlerocket: its NVIDIA AMI runs the NVIDIA device "
    "plugin, and the DRA driver must not share a node with it; turning it off takes "
    "settings.kubelet-device-plugins.nvidia.enabled = false in the node's user data "
    "(Bottlerocket 1.63.0 or later), which gpu-pool does not write: use ami_family: AL2023",
)

AUTO_MODE_BEFORE_1_36 = (
    "E",
    "pool.gpu_software: 'dra-driver' with provisioner: auto-mode on Kubernetes {}: Auto Mode "
    "nodes run the NVIDIA DRA driver (in their node runtime, nothing to install) from "
    "Kubernetes 1.36: set cluster.kubernetes_version to 1.36 or later, or remove gpu_software "
    "(Auto Mode's device plugin)",
)


SHARING_REFUSED = {
    "time-slicing": (
        "E",
        "pool.sharing.mode: 'time-slicing' with gpu_software: dra-driver: gpu-pool's "
        "time-slicing is the device plugin's (shares advertised as nvidia.com/gpu); the DRA "
        "driver time-slices a GPU only through its TimeSlicingSettings feature gate, alpha and "
        "off by default (dra-driver-nvidia-gpu v0.4.1 pkg/featuregates), which gpu-pool does not "
        "turn on: set mode: none, or use gpu_software: device-plugin",
    ),
    "mig": (
        "E",
        "pool.sharing.mode: 'mig' with gpu_software: dra-driver: the DRA driver advertises MIG "
        "devices that already exist (DeviceClass mig.nvidia.com), but gpu-pool partitions a "
        "pool's GPUs with the GPU Operator's MIG manager (nvidia.com/mig.config), which does "
        "not run on DRA nodes, and the driver's own partitioning (feature gate DynamicMIG) is "
        "alpha and off by default: set mode: none, or use gpu_software: gpu-operator",
    ),
}


def sharing_refused(mode):
    return SHARING_REFUSED[mode]


CASES = {
    # EKS's guide: Kubernetes 1.34 or later (the default, 1.36, and 1.34 itself pass).
    "on-the-default-kubernetes": ({"pool": DRA}, []),
    "on-kubernetes-1.34": ({"cluster": {"kubernetes_version": "1.34"}, "pool": DRA}, []),
    "on-kubernetes-1.33": (
        {"cluster": {"kubernetes_version": "1.33"}, "pool": DRA},
        [
            (
                "E",
                "pool.gpu_software: 'dra-driver' on Kubernetes 1.33: the NVIDIA DRA driver "
                "needs resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the "
                "driver on 1.34 or later): set cluster.kubernetes_version to 1.34 or later, or "
                "use gpu_software: device-plugin",
            )
        ],
    ),
    # Auto Mode nodes run the driver themselves from Kubernetes 1.36 (the default), and refuse
    # it before, with the version to use; one line: Auto Mode's own gpu_software rule (GP-AUTO-07)
    # leaves the driver to GP-DRA-02, and GP-DRA-01's 1.34 does not apply.
    "with-auto-mode": ({"pool": {"provisioner": "auto-mode", **DRA_SOFTWARE}}, []),
    "with-auto-mode-on-kubernetes-1.35": (
        {
            "cluster": {"kubernetes_version": "1.35"},
            "pool": {"provisioner": "auto-mode", **DRA_SOFTWARE},
        },
        [("E", AUTO_MODE_BEFORE_1_36[1].format("1.35"))],
    ),
    "with-auto-mode-on-kubernetes-1.33": (
        {
            "cluster": {"kubernetes_version": "1.33"},
            "pool": {"provisioner": "auto-mode", **DRA_SOFTWARE},
        },
        [("E", AUTO_MODE_BEFORE_1_36[1].format("1.33"))],
    ),
    # The node-group pool's release serves its own nodes only; the Auto Mode pool's nodes run
    # Auto Mode's driver, so neither is missing an advertiser.
    "with-auto-mode-beside-a-node-group-dra-pool": (
        {
            "pools": {
                "a": {"labels": {"workload": "a"}, **DRA},
                "b": {
                    "provisioner": "auto-mode",
                    "instance_types": ["g6e.xlarge"],
                    "labels": {"workload": "b"},
                    "taints": [{"key": "nvidia.com/gpu", "value": "auto-mode"}],
                    **DRA_SOFTWARE,
                },
            }
        },
        [],
    ),
    # Auto Mode picks its AMIs: Bottlerocket's rule (GP-DRA-03) does not apply there.
    "with-auto-mode-and-a-bottlerocket-family": (
        {"pool": {"provisioner": "auto-mode", "ami_family": "BOTTLEROCKET", **DRA_SOFTWARE}},
        [],
    ),
    "on-bottlerocket": ({"pool": {"ami_family": "BOTTLEROCKET", **DRA}}, [BOTTLEROCKET_REFUSED]),
    # One line each: the device plugin's sharing rules (GP-SHARE-*) do not apply to the driver.
    "with-time-slicing": (
        {"pool": {"sharing": {"mode": "time-slicing", "replicas": 4}, **DRA}},
        [sharing_refused("time-slicing")],
    ),
    "with-mig": (
        {
            "pool": {
                "instance_types": ["p5.48xlarge"],
                "sharing": {"mode": "mig", "strategy": "single", "profile": "1g.10gb"},
                **DRA,
            }
        },
        [sharing_refused("mig")],
    ),
    # Karpenter 1.15 sizes nodes for DRA claims (settings.enableDRA): a DRA pool scales from
    # zero, no min_size needed, on every type its DRA metadata describes.
    "with-karpenter": ({"pool": KARPENTER}, []),
    "with-karpenter-on-every-described-family": (
        {
            "pool": {
                "instance_types": ["g6.xlarge", "g6e.12xlarge", "p5.48xlarge", "p6-b200.48xlarge"],
                **KARPENTER,
            }
        },
        [],
    ),
    "with-karpenter-on-bottlerocket": (
        {"pool": {"ami_family": "BOTTLEROCKET", **KARPENTER}},
        [BOTTLEROCKET_REFUSED],
    ),
    # Karpenter has no DRA metadata for p6e-gb200 (nor for newer types such as g7e).
    "with-karpenter-on-p6e-gb200": (
        {"pool": {"instance_types": ["p6e-gb200.36xlarge"], **KARPENTER}},
        [
            (KARPENTER_TYPE_REFUSED[0], KARPENTER_TYPE_REFUSED[1].format("p6e-gb200.36xlarge")),
            ULTRASERVER_ON_KARPENTER,
        ],
    ),
    "with-karpenter-on-g7e": (
        {"pool": {"instance_types": ["g7e.2xlarge"], **KARPENTER}},
        [(KARPENTER_TYPE_REFUSED[0], KARPENTER_TYPE_REFUSED[1].format("g7e.2xlarge"))],
    ),
    "with-karpenter-before-1.15": (
        {"karpenter": {"chart_version": "1.14.1"}, "pool": KARPENTER},
        [
            (
                "E",
                "karpenter.chart_version: 1.14.1 with pool 'gpu' on gpu_software: dra-driver: "
                "Karpenter before 1.15.0 ignores a pod's ResourceClaims when it launches nodes "
                "(settings.enableDRA came in 1.15.0), so the pool would never scale from zero: "
                "set karpenter.chart_version to 1.15.0 or newer (the pin is 1.15.0), or leave "
                "it unset",
            )
        ],
    ),
    "with-karpenter-on-kubernetes-1.33": (
        {"cluster": {"kubernetes_version": "1.33"}, "pool": KARPENTER},
        [
            (
                "E",
                "pool.gpu_software: 'dra-driver' on Kubernetes 1.33: the NVIDIA DRA driver "
                "needs resource.k8s.io/v1, which Kubernetes serves from 1.34 (EKS supports the "
                "driver on 1.34 or later): set cluster.kubernetes_version to 1.34 or later, or "
                "use gpu_software: device-plugin",
            )
        ],
    ),
    # Two DRA pools share the cluster's one release; beside a GPU Operator pool, the DRA nodes'
    # operand opt-out keeps the operator's device plugin off them.
    "two-dra-pools-and-an-operator": (
        {
            "pools": {
                "a": {"labels": {"workload": "a"}, **DRA},
                "b": {"instance_types": ["g6.xlarge"], "labels": {"workload": "b"}, **DRA},
                "c": {
                    "instance_types": ["g6e.xlarge"],
                    "labels": {"workload": "c"},
                    "gpu_software": "gpu-operator",
                },
            }
        },
        [],
    ),
}


@pytest.mark.parametrize(("settings", "expected"), CASES.values(), ids=CASES.keys())
def test_rule_reports_its_exact_message(settings, expected):
    assert rules.findings(settings) == expected


def dra_plan(name="gpu", setting="pools.a", **settings):
    return plan_pool(PoolSettings(name=name, gpu_software="dra-driver", **settings), setting)


def test_a_dra_pool_gets_no_device_plugin_and_opts_out_of_the_operator():
    plan = dra_plan()
    assert plan.chart is None
    (group,) = plan.node_groups
    assert group.labels[OPERANDS_LABEL] == "false"


def test_the_dra_kubelet_plugin_and_a_device_plugin_on_one_node_are_an_error():
    """Plans with one name (what a duplicate name would make; GP-PAIR-01 stops it first): the
    driver's kubelet plugin selects the name, so it reaches the device-plugin pool's nodes, and
    that pool's plugin reaches the DRA pool's nodes. Before the driver counted as an advertiser
    only the second was found, with the advice for two device plugins."""
    dra = dra_plan(setting="pools.a")
    plugin = plan_pool(PoolSettings(instance_types=["g6.xlarge"]), "pools.b")
    found = documented(check_one_device_plugin_per_node([dra, plugin], plugin))
    assert [str(f) for f in found] == [
        "pools.b: g5.xlarge nodes of pool 'gpu' would also run the device plugin of pool 'gpu'; "
        "a device plugin beside the DRA driver hands the node's GPUs out twice: a node must run "
        "exactly one of them",
        "pools.b: g6.xlarge nodes of pool 'gpu' would also run the NVIDIA DRA driver's kubelet "
        "plugin of pool 'gpu'; a device plugin beside the DRA driver hands the node's GPUs out "
        "twice: a node must run exactly one of them",
    ]


def test_the_operators_device_plugin_on_a_dra_node_is_an_error():
    """A DRA node without the operand opt-out would get the GPU Operator's device plugin."""
    dra = dra_plan(setting="pools.a", labels={"workload": "a"})
    (group,) = dra.node_groups
    labels = {k: v for k, v in group.labels.items() if k != OPERANDS_LABEL}
    exposed = replace(dra, node_groups=(replace(group, labels=labels),))
    operator = plan_pool(
        PoolSettings(name="op", gpu_software="gpu-operator", instance_types=["g6.xlarge"]),
        "pools.op",
    )
    found = documented(check_one_device_plugin_per_node([exposed, operator], operator))
    assert [str(f) for f in found] == [
        "pools.op: g5.xlarge nodes of pool 'gpu' would also run the device plugin of pool 'op'; "
        "a device plugin beside the DRA driver hands the node's GPUs out twice: a node must run "
        "exactly one of them",
    ]


def test_a_kubelet_plugin_that_misses_its_pools_nodes_is_an_error(monkeypatch):
    plan = dra_plan(setting="pools.a")
    chart = dra_driver_chart([plan])
    assert chart is not None
    lost = replace(chart, device_plugin_pod={"nodeSelector": {"gpu-pool.io/pool": "elsewhere"}})
    monkeypatch.setattr(between_pools, "dra_driver_chart", lambda plans: lost)
    (finding,) = documented(check_one_device_plugin_per_node([plan], plan))
    assert str(finding) == (
        "pools.a.instance_types[0]: the NVIDIA DRA driver's kubelet plugin would not run on "
        "g5.xlarge nodes of pool 'gpu' (labels {'accelerator': 'nvidia', 'workload': "
        "'inference', 'gpu-pool.io/pool': 'gpu', 'nvidia.com/gpu.present': 'true', "
        "'nvidia.com/gpu.deploy.operands': 'false'}); they would publish no ResourceSlice and "
        "GPU claims would stay unallocated"
    )


def test_one_release_serves_every_dra_pool_and_no_other():
    taint = {"key": "team", "value": "b", "effect": "NoExecute"}
    a = dra_plan("a", "pools.a")
    b = dra_plan("b", "pools.b", instance_types=["g6.xlarge"], taints=[taint])
    other = plan_pool(PoolSettings(name="c", instance_types=["g6e.xlarge"]), "pools.c")
    chart = dra_driver_chart([other, b, a])
    assert chart is not None
    assert (chart.release, chart.pin.chart, chart.version, chart.pin.namespace) == (
        "nvidia-dra-driver-gpu",
        "dra-driver-nvidia-gpu",
        "0.4.1",
        "nvidia-dra-driver-gpu",
    )
    assert chart.values["kubeletPlugin"] == {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "gpu-pool.io/pool", "operator": "In", "values": ["a", "b"]}
                            ]
                        }
                    ]
                }
            }
        },
        # The shared GPU taint once, then b's own.
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "team", "operator": "Exists", "effect": "NoExecute"},
        ],
    }
    pod = chart.device_plugin_pod
    for plan, admitted in ((a, True), (b, True), (other, False)):
        (group,) = plan.node_groups
        assert pod_fits_node(pod, group.labels, plan.node_taints()) is admitted
    assert dra_driver_chart([other]) is None


def test_compute_domains_are_on_only_with_an_ultraserver_pool():
    """The switch reads the catalog's UltraServer flag of the DRA pools' types (p6e-gb200)."""
    ultraserver = ["p6e-gb200.36xlarge"]
    plain = dra_plan("plain", "pools.plain")
    assert dra_driver_chart([plain]).values["resources"] == {
        "gpus": {"enabled": True},
        "computeDomains": {"enabled": False},
    }
    ultra = dra_plan("ultra", "pools.ultra", instance_types=ultraserver)
    assert dra_driver_chart([plain, ultra]).values["resources"] == {
        "gpus": {"enabled": True},
        "computeDomains": {"enabled": True},
    }
    # An UltraServer pool without ComputeDomains turns nothing on.
    plugin = plan_pool(
        PoolSettings(name="p", instance_types=ultraserver, compute_domains="none"), "pools.p"
    )
    assert dra_driver_chart([plain, plugin]).values["resources"]["computeDomains"] == {
        "enabled": False
    }


def test_a_dra_node_groups_template_advertises_no_nvidia_gpu():
    """CA's zero-node template must not promise nvidia.com/gpu on a DRA node (its GPUs are
    ResourceSlice devices): the tag is 0, which overrides CA's own instance table."""
    (group,) = dra_plan("dra", "pools.dra").node_groups
    tags = group.node_template_tags()
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "0"
    (plain,) = plan_pool(PoolSettings(name="p"), "pools.p").node_groups
    assert plain.node_template_tags()[
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
    ] == "1"
