"""The NVIDIA DRA driver release's values a cluster should get, written out independently of
gpu_pool/plan/dra.py: the tests compare the synthesized release with these."""

from __future__ import annotations

POOL_LABEL = "gpu-pool.io/pool"
NAMESPACE = "nvidia-dra-driver-gpu"


def _required(*expressions: dict) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
            }
        }
    }


def expected_driver_values(
    pools: list[str], tolerations: list[dict], *, compute_domains: bool, gpus: bool = True
):
    """Chart 0.4.1's values: its objects named as the 25.12.0 chart named them, GPUs with
    `gpus` (with the override its validation asks for), ComputeDomains with
    `compute_domains`, the host's driver root, the kubelet plugin on
    `pools`' nodes tolerating `tolerations`, the controller on any node of no GPU pool."""
    return {
        "nameOverride": "nvidia-dra-driver-gpu",
        "nvidiaDriverRoot": "/",
        "resourceApiVersion": "resource.k8s.io/v1",
        **({"gpuResourcesEnabledOverride": True} if gpus else {}),
        "controller": {
            "tolerations": [],
            "affinity": _required({"key": POOL_LABEL, "operator": "DoesNotExist"}),
        },
        "resources": {"gpus": {"enabled": gpus}, "computeDomains": {"enabled": compute_domains}},
        "kubeletPlugin": {
            "affinity": _required({"key": POOL_LABEL, "operator": "In", "values": pools}),
            "tolerations": tolerations,
        },
    }
