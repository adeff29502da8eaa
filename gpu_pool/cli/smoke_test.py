"""The smoke-test pod: the smallest workload that proves the pool schedules GPU pods."""

from __future__ import annotations

from typing import Any

from gpu_pool.plan.node_template import EFA_RESOURCE
from gpu_pool.plan.record import PoolRecord

# CUDA base image with nvidia-smi (NVIDIA NGC, CUDA 12.9 on Ubuntu 24.04): runs on every GPU in
# the catalog with the AMIs' 580 driver.
SMOKE_TEST_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


def smoke_resources(pool: PoolRecord) -> list[str]:
    """The GPU resources a smoke pod may ask of the pool: nvidia.com/gpu, or what its sharing
    advertises (a share, or a MIG profile of its layout); the first is the default."""
    return pool.sharing.workload_resources if pool.sharing is not None else [pool.gpu_resource]


def smoke_test_pod(
    pool: PoolRecord,
    name: str = "gpu-pool-smoke-test",
    gpus: int = 1,
    resource: str | None = None,
) -> dict[str, Any]:
    """A pod that asks for `gpus` of `resource` (default: the pool's first in
    `smoke_resources`), and on an EFA pool one EFA interface (which proves the EFA device plugin
    serves the node), selects the pool's nodes and tolerates its taints."""
    limits = {resource or smoke_resources(pool)[0]: str(gpus)}
    if pool.efa_interfaces:
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
            "nodeSelector": dict(pool.node_selector),
            "tolerations": [dict(t) for t in pool.tolerations],
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
