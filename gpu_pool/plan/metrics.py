"""GPU metrics for the cluster: where NVIDIA's dcgm-exporter runs, from every pool's plan; and
the CloudWatch add-on's configuration and the instance types its own exporter runs on.

The exporter must reach every GPU node, whatever its pool's taints, and stay off CPU nodes
(its DCGM host engine needs a GPU). Pool nodes say they have GPUs with
`nvidia.com/gpu.present=true`; nodes of a pool that uses the GPU Operator get the operator's
own dcgm-exporter (enabled in its chart by default, NVIDIA/gpu-operator v26.3.1 values
`dcgmExporter.enabled`), so this one selects the nodes that opted out of the operator's operands
(`nvidia.com/gpu.deploy.operands=false`): every GPU node then runs exactly one exporter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_pool.model.labels import GPU_PRESENT_LABEL, OPERANDS_LABEL
from gpu_pool.plan.pool import PoolPlan

# The scheduling part of the pinned chart's values.yaml (NVIDIA/dcgm-exporter 4.5.3-4.8.2
# deployment/values.yaml): no selection, and a toleration of the control plane only, so by
# default it runs on no tainted GPU node (NVIDIA/dcgm-exporter#731).
DCGM_EXPORTER_CHART_DEFAULTS: dict[str, Any] = {
    "nodeSelector": {},
    "affinity": {},
    "tolerations": [
        {
            "key": "node-role.kubernetes.io/control-plane",
            "operator": "Exists",
            "effect": "NoSchedule",
        }
    ],
}


# The EKS add-on of metrics.gpu: cloudwatch.
CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"
# Where the CloudWatch add-on's DCGM exporter runs: the EC2 names of its required node affinity
# (`node.kubernetes.io/instance-type In [...]`, chart 6.4.0 values.yaml `dcgmExporter.affinity`,
# the chart of the pinned add-on; its ml.* names are SageMaker HyperPod's). A node of any other
# type runs no exporter and sends no GPU metrics (checks/metrics.py warns).
CLOUDWATCH_DCGM_EXPORTER_INSTANCE_TYPES = frozenset(
    f"{family}.{size}"
    for family, sizes in {
        "g3": "4xlarge 8xlarge 16xlarge",
        "g3s": "xlarge",
        "g4ad": "xlarge 2xlarge 4xlarge 8xlarge 16xlarge",
        "g4dn": "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge metal",
        "g5": "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
        "g5g": "xlarge 2xlarge 4xlarge 8xlarge 16xlarge metal",
        "g6": "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
        "g6e": "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
        "gr6": "4xlarge 8xlarge",
        "p2": "xlarge 8xlarge 16xlarge",
        "p3": "2xlarge 8xlarge 16xlarge",
        "p3dn": "24xlarge",
        "p4d": "24xlarge",
        "p4de": "24xlarge",
        "p5": "48xlarge",
        "p5e": "48xlarge",
        "p5en": "48xlarge",
        "p6-b200": "48xlarge",
        "p6-b300": "48xlarge",
        "p6e-gb200": "36xlarge",
    }.items()
    for size in sizes.split()
)

# The CloudWatch add-on's configuration values: GPU metrics, and not the two things the add-on
# also turns on by default that nobody asked for with `metrics.gpu`. Both keys are the add-on's
# documented advanced configuration (Amazon CloudWatch user guide, "Install the CloudWatch agent
# with the Amazon CloudWatch Observability EKS add-on or the Helm chart"): `containerLogs.enabled:
# false` ("Opt out of collecting container logs": no Fluent Bit shipping every pod's logs to
# CloudWatch Logs), and `manager.applicationSignals.autoMonitor.monitorAllServices: false`
# ("Application Signals Auto monitor", default true: every service's pods instrumented for
# Application Signals when they start). Container Insights metrics, GPU metrics among them,
# stay on.
CLOUDWATCH_ADDON_CONFIGURATION: dict[str, Any] = {
    "containerLogs": {"enabled": False},
    "manager": {"applicationSignals": {"autoMonitor": {"monitorAllServices": False}}},
}


def dcgm_exporter_values(service_monitor: bool, tolerations: object) -> dict[str, Any]:
    """The exporter on GPU nodes outside the GPU Operator's reach, with `tolerations` (the
    pools' taints, dcgm_exporter_tolerations; a construct passes them resolved at synth, once
    every pool on the cluster is known); its ServiceMonitor (Prometheus Operator CRDs) only if
    asked."""
    expressions = [
        {"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]},
        {"key": OPERANDS_LABEL, "operator": "In", "values": ["false"]},
    ]
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        },
        "tolerations": tolerations,
        "serviceMonitor": {"enabled": service_monitor},
    }


def dcgm_exporter_tolerations(plans: Sequence[PoolPlan]) -> list[dict[str, str]]:
    """A toleration of each taint of the pools' nodes (whatever its value), each once."""
    tolerations: list[dict[str, str]] = []
    for plan in plans:
        for taint in plan.taints:
            toleration = taint.any_value_toleration()
            if toleration not in tolerations:
                tolerations.append(toleration)
    return tolerations
