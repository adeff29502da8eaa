"""The rules only a library app meets: what the cluster an app hands a construct must offer.
(The bundled app's settings say the same in their own terms: checks/app.py.)"""

from __future__ import annotations

from gpu_pool.model.findings import Finding, error, warning

# What an Auto Mode NodeClass needs of the cluster, and what breaks without it.
_WITHOUT_AUTO_MODE = (
    "without it the deploy fails where it applies the pool's NodeClass (eks.amazonaws.com/v1, "
    "a kind only Auto Mode serves)"
)


def check_auto_mode_compute(enabled: bool | None) -> list[Finding]:
    """An AutoModeNodePool's cluster must have EKS Auto Mode compute enabled. `enabled` is
    None for an imported cluster, whose configuration the synth cannot see: a warning then."""
    if enabled is None:
        return [
            warning(
                "GP-LIB-01",
                "cluster",
                "imported, so the synth cannot see whether it has EKS Auto Mode compute enabled "
                f"(aws eks describe-cluster: cluster.computeConfig.enabled true); "
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
