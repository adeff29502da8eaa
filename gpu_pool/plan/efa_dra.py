"""The EFA DRA driver (`efa_software: dra-driver` on an `efa` pool): one aws-dranet release per
cluster, on exactly those pools' nodes.

The chart (aws/eks-charts stable/aws-dranet 1.0.0) creates the cluster-scoped DeviceClass
`efa.networking.k8s.aws` (templates/deviceclass.yaml), so a second release would collide with
the first: every such pool shares one release, whose DaemonSet (templates/daemonset.yaml) runs
where its required node affinity admits. That affinity is one term per
`supportedInstanceLabels.keys` entry, `<key> In supportedInstanceLabels.values`, each also
excluding Auto Mode nodes; by default the key is the instance type and the values every EFA
type. Ours is the pool label and the pools' names (Helm replaces both lists), so the driver
runs on those pools' nodes and no other: every node of an `efa` pool is an EFA type (GP-TRAIN
rules), and an EFA pool on the device plugin keeps its plugin alone (checks/efa_dra.py). The
chart tolerates only CriticalAddonsOnly by default; each pool's taints are added.

Those pools get no EFA device plugin (gpu_software.efa_device_plugin_chart): the EKS UG "Manage
EFA devices on Amazon EKS" says never to run the EFA DRA driver and the EFA device plugin on one
node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_pool.model.labels import POOL_LABEL
from gpu_pool.model.versions import AWS_DRANET
from gpu_pool.plan.dra import kubelet_plugin_values
from gpu_pool.plan.gpu_software import GpuSoftwareChart
from gpu_pool.plan.pool import PoolPlan

EFA_DRA_DRIVER = "dra-driver"
EFA_DRA_RELEASE = "aws-dranet"
EFA_DRA_CONSTRUCT_ID = "AwsDranet"
# The driver's name in its ResourceSlices and its DeviceClass (templates/deviceclass.yaml).
EFA_DRA_DRIVER_NAME = "dra.net"
EFA_DEVICE_CLASS = "efa.networking.k8s.aws"

# What templates/daemonset.yaml puts beside our values in the pod spec: its own toleration and
# its Auto Mode exclusion in every affinity term.
_CHART_TOLERATION = {"key": "CriticalAddonsOnly", "operator": "Exists"}
_NOT_AUTO_MODE = {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]}


def efa_dra_pools(plans: Sequence[PoolPlan]) -> list[PoolPlan]:
    """The pools of `plans` whose EFA interfaces the EFA DRA driver advertises."""
    return [p for p in plans if p.settings.efa and p.settings.efa_software == EFA_DRA_DRIVER]


def efa_dra_chart(plans: Sequence[PoolPlan]) -> GpuSoftwareChart | None:
    """The cluster's one aws-dranet release for the EFA DRA pools among `plans` (in name
    order, so the values do not depend on the order the pools were added in); None without
    any. `device_plugin_pod` is its DaemonSet's pod terms as the chart renders them."""
    pools = sorted(efa_dra_pools(plans), key=lambda p: p.name)
    if not pools:
        return None
    names = [p.name for p in pools]
    # Each pool's taints once, as the NVIDIA DRA driver's kubelet plugin tolerates them.
    tolerations = kubelet_plugin_values(pools)["tolerations"]
    values: dict[str, Any] = {
        "supportedInstanceLabels": {"keys": [POOL_LABEL], "values": names},
        "tolerations": tolerations,
    }
    selected = {"key": POOL_LABEL, "operator": "In", "values": names}
    pod = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [selected, _NOT_AUTO_MODE]}]
                }
            }
        },
        "tolerations": [_CHART_TOLERATION, *tolerations],
    }
    return GpuSoftwareChart(
        construct_id=EFA_DRA_CONSTRUCT_ID,
        pin=AWS_DRANET,
        version=AWS_DRANET.version,
        release=EFA_DRA_RELEASE,
        values=values,
        device_plugin_pod=pod,
    )
