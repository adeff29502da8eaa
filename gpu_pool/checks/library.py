"""The rules only a library app meets: what the cluster an app hands a construct must offer
(Auto Mode compute, the node monitoring agent a repairing pool needs), and pools planned for
other GPU metrics than the cluster's. (The bundled app's settings say the first in their own
terms, checks/app.py and checks/repair.py, and plan every pool for the cluster's metrics.)"""

from __future__ import annotations

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.plan.pool import PoolPlan
from gpu_pool.plan.repair import NODE_MONITORING_AGENT_ADDON
from gpu_pool.settings.controllers import GpuMetricsChoice

# What an Auto Mode NodeClass needs of the cluster, and what breaks without it.
_WITHOUT_AUTO_MODE = (
    "without it the deploy fails where it applies the pool's NodeClass (eks.amazonaws.com/v1, "
    "a kind only Auto Mode serves)"
)


def check_auto_mode_compute(enabled: bool | None) -> list[Finding]:
    """An AutoModeNodePool's cluster must have EKS Auto Mode compute enabled. `enabled` is
    None where the synth cannot see it (an imported cluster, a ComputeConfig given as a
    token): a warning then, which the app may acknowledge."""
    if enabled is None:
        return [
            warning(
                "GP-LIB-01",
                "cluster",
                "imported or given its ComputeConfig as a token, so the synth cannot see whether "
                "it has EKS Auto Mode compute enabled (aws eks describe-cluster: "
                f"cluster.computeConfig.enabled true); "
                f"{_WITHOUT_AUTO_MODE}",
            )
        ]
    if enabled:
        return []
    return [
        error(
            "GP-LIB-02",
            "cluster",
            "has no EKS Auto Mode compute, which an AutoModeNodePool needs: create the "
            "aws_eks_v2.Cluster with default_capacity_type=DefaultCapacityType.AUTOMODE and "
            "compute=ComputeConfig(node_pools=[]) (Auto Mode without its built-in node pools), "
            f"or render the pool with GpuNodePool or KarpenterNodePool; {_WITHOUT_AUTO_MODE}",
        )
    ]


def check_operator_exporter(metrics: GpuMetricsChoice, plan: PoolPlan) -> list[Finding]:
    """A GPU Operator pool planned for the cluster's GPU metrics (`plan_pool`'s `metrics`): with
    the CloudWatch add-on its operator's own DCGM exporter is off (plan/gpu_software.py), with
    dcgm-exporter it is what serves the pool's nodes."""
    if plan.gpu_software != "gpu-operator" or plan.chart is None or metrics == "none":
        return []
    planned_for_cloudwatch = plan.chart.values.get("dcgmExporter") == {"enabled": False}
    if planned_for_cloudwatch == (metrics == "cloudwatch"):
        return []
    if metrics == "cloudwatch":
        what = (
            "the operator's own DCGM exporter would run beside the add-on's, two DCGM host "
            "engines contending for the GPUs' profiling metrics"
        )
    else:
        what = (
            "its operator runs no DCGM exporter and dcgm-exporter leaves GPU Operator nodes to "
            "it, so the pool's nodes would send no GPU metrics"
        )
    return [
        error(
            "GP-LIB-03",
            f"{plan.setting}.gpu_software",
            f"'gpu-operator' on a cluster whose GpuMetrics is '{metrics}', but the pool was "
            f"planned for {'another choice' if metrics == 'cloudwatch' else 'cloudwatch'}: "
            f"{what}; plan it with plan_pool(settings, metrics='{metrics}')",
        )
    ]


def check_repair_agent(plan: PoolPlan) -> list[Finding]:
    """GP-LIB-04: a node group or Karpenter pool that repairs, on a cluster to which the app
    adds no node monitoring agent add-on. Repair acts on the conditions the agent sets (EKS user
    guide, "Automatically repair nodes in EKS clusters"); Auto Mode's nodes run it themselves.
    A warning: the cluster may run it already, which the synth cannot see."""
    if not plan.repair.enabled or plan.provisioner == "auto-mode":
        return []
    return [
        warning(
            "GP-LIB-04",
            f"{plan.setting}.repair",
            f"on, but the app adds no {NODE_MONITORING_AGENT_ADDON} add-on to the cluster: "
            "without the agent no node reports AcceleratedHardwareReady, so a broken GPU is "
            "neither found nor repaired. Add it (gpu_pool.node_monitoring_agent(scope, "
            "cluster): the add-on at gpu-pool's pinned version and configuration), or, where "
            "the cluster runs it already (aws eks describe-addon --addon-name "
            f"{NODE_MONITORING_AGENT_ADDON}), acknowledge gpu-pool:GP-LIB-04",
        )
    ]
