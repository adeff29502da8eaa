"""The smoke-test pod: the smallest workload that proves the pool schedules GPU pods."""

from __future__ import annotations

from typing import Any

from gpu_pool.plan.record import PoolRecord

# CUDA base image with nvidia-smi (NVIDIA NGC, CUDA 12.9 on Ubuntu 24.04): runs on every GPU in
# the catalog with the AMIs' 580 driver.
SMOKE_TEST_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


def smoke_test_pod(
    pool: PoolRecord, name: str = "gpu-pool-smoke-test", gpus: int = 1
) -> dict[str, Any]:
    """A pod that asks for `gpus` GPUs, selects the pool's nodes and tolerates its taints."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/name": "gpu-pool-smoke-test"},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": dict(pool.node_selector),
            "tolerations": [dict(t) for t in pool.tolerations],
            "containers": [
                {
                    "name": "nvidia-smi",
                    "image": SMOKE_TEST_IMAGE,
                    "command": ["nvidia-smi"],
                    "resources": {"limits": {pool.gpu_resource: str(gpus)}},
                }
            ],
        },
    }
