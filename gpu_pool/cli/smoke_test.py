"""The smoke-test pod: the smallest workload that proves the pool schedules GPU pods."""

from __future__ import annotations

from typing import Any

from gpu_pool.model.labels import GPU_RESOURCE
from gpu_pool.plan.node_template import EFA_RESOURCE
from gpu_pool.plan.pool import PoolPlan

# CUDA base image with nvidia-smi (NVIDIA NGC, CUDA 12.9 on Ubuntu 24.04): runs on every GPU in
# the catalog with the AMIs' 580 driver.
SMOKE_TEST_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


def smoke_test_pod(
    pool: PoolPlan, name: str = "gpu-pool-smoke-test", gpus: int = 1
) -> dict[str, Any]:
    """A pod that asks for `gpus` GPUs (and on an EFA pool one EFA interface, which proves the
    EFA device plugin serves the node), selects the pool's nodes and tolerates its taints."""
    limits = {GPU_RESOURCE: str(gpus)}
    if pool.capacity.efa:
        limits[EFA_RESOURCE] = "1"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/name": "gpu-pool-smoke-test"},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": pool.workload_node_selector,
            "tolerations": pool.workload_tolerations,
            "containers": [
                {
                    "name": "nvidia-smi",
                    "image": SMOKE_TEST_IMAGE,
                    "command": ["nvidia-smi"],
                    "resources": {"limits": limits},
                }
            ],
        },
    }
