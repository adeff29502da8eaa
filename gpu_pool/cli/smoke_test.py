"""The smoke test: the smallest workload that proves the pool schedules GPU pods.

A device-plugin pool's is one pod asking for nvidia.com/gpu. A DRA pool's (`gpu_software:
dra-driver`) asks through a ResourceClaimTemplate for one device of the NVIDIA DRA driver's GPU
DeviceClass. An EFA pool's pod also asks for one EFA interface: of the EFA device plugin, or with
`efa_software: dra-driver` in the claim, from the EFA DRA driver's DeviceClass and, on a DRA
pool, on the same PCIe root as its GPU. An UltraServer pool's proves multi-node NVLink: a
ComputeDomain of two nodes and two pods, one per node, each claiming the domain's IMEX channel
and its node's GPUs.
"""

from __future__ import annotations

from typing import Any

from gpu_pool.model.catalog import CatalogError, lookup
from gpu_pool.plan.dra import GPU_DEVICE_CLASS
from gpu_pool.plan.efa_dra import EFA_DEVICE_CLASS
from gpu_pool.plan.node_template import EFA_RESOURCE
from gpu_pool.plan.record import PoolRecord

# CUDA base image with nvidia-smi (NVIDIA NGC, CUDA 12.9 on Ubuntu 24.04): runs on every GPU in
# the catalog with the AMIs' 580 driver.
SMOKE_TEST_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
SMOKE_TEST_NAME = "gpu-pool-smoke-test"
# The label of every smoke-test object, and of an UltraServer test's pods its run's name (their
# anti-affinity term selects the other by it).
APP_LABEL = "app.kubernetes.io/name"
RUN_LABEL = "gpu-pool.io/smoke-test"

DRA_DRIVER = "dra-driver"
# The DRA API the driver's chart installs its DeviceClasses with on Kubernetes 1.34 and later
# (templates/_helpers.tpl resourceApiVersion, kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1).
RESOURCE_API = "resource.k8s.io/v1"
# The standard device attribute both DRA drivers publish for a device's PCIe root, which a
# claim's matchAttribute constraint aligns a GPU and an EFA by (EKS UG "Manage EFA devices on
# Amazon EKS"; Kubernetes "Dynamic Resource Allocation").
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"
# ComputeDomains: the served version of the driver's CRD (crds/resource.nvidia.com_computedomains
# .yaml at v0.4.1).
COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# The container of a one-node smoke pod.
_NVIDIA_SMI = {"name": "nvidia-smi", "command": ["nvidia-smi"]}
# Where the driver puts a pod's IMEX channels (demo/specs/imex/channel-injection.yaml).
IMEX_CHANNELS = "/dev/nvidia-caps-imex-channels"
# Two nodes: the fewest that prove an IMEX domain crosses nodes.
COMPUTE_DOMAIN_NODES = 2
# Each UltraServer pod prints its GPUs, its GPUs' NVLink fabric (State Completed, Status Success,
# and the ClusterUUID and CliqueId both pods share), and its IMEX channels; it fails without a
# fabric section or without channel0, the channel a ComputeDomain hands its pods.
IMEX_CHECK = (
    "set -e; nvidia-smi -L; nvidia-smi -q | grep -i -A 4 '^ *fabric'; "
    f"ls {IMEX_CHANNELS}; test -e {IMEX_CHANNELS}/channel0; echo imex-channel: channel0"
)


def uses_dra(pool: PoolRecord) -> bool:
    """Whether the pool's GPUs are the NVIDIA DRA driver's (claimed, not counted)."""
    return pool.gpu_software == DRA_DRIVER


def uses_efa_dra(pool: PoolRecord) -> bool:
    """Whether the pool's EFA interfaces are the EFA DRA driver's (claimed, not counted)."""
    return pool.efa_software == DRA_DRIVER


def ultraserver(pool: PoolRecord) -> bool:
    """Whether the pool runs an UltraServer type, whose NVLink domain spans nodes. A type this
    command's catalog does not know (a record of a newer library) is not taken for one."""
    names = [t for group in pool.node_groups for t in group.instance_types]
    names += list(pool.instance_types or ())
    for name in names:
        try:
            if lookup(name).family.ultraserver:
                return True
        except CatalogError:
            continue
    return False


def smoke_resources(pool: PoolRecord) -> list[str]:
    """The GPU resources a smoke pod may ask of the pool: nvidia.com/gpu, or what its sharing
    advertises (a share, or a MIG profile of its layout), or on a DRA pool the driver's GPU
    DeviceClass; the first is the default."""
    if uses_dra(pool):
        return [GPU_DEVICE_CLASS]
    return pool.sharing.workload_resources if pool.sharing is not None else [pool.gpu_resource]


def smoke_test_objects(
    pool: PoolRecord, name: str = SMOKE_TEST_NAME, resource: str | None = None
) -> list[dict[str, Any]]:
    """Every object of the pool's smoke test, in the order they are created: the pod; on a DRA
    pool its ResourceClaimTemplate first; on an UltraServer pool (whose ComputeDomains every
    synth keeps on, GP-ULTRA-01) the ComputeDomain, on a DRA pool the GPU claim template, and
    the two pods, each asking for its node's GPUs as the pool advertises them."""
    gpus = max(pool.gpus_per_node, 1)
    if ultraserver(pool):
        dra = uses_dra(pool)
        claims = {"gpus": f"{name}-gpus"} if dra else {}
        claims["imex-channel"] = f"{name}-channel"
        limits = {} if dra else {smoke_resources(pool)[0]: str(gpus)}
        return [
            compute_domain(name, claims["imex-channel"]),
            *([gpu_claim_template(claims["gpus"], gpus)] if dra else []),
            *(imex_pod(pool, f"{name}-{i}", name, claims, limits) for i in (0, 1)),
        ]
    if uses_efa_dra(pool):
        template = efa_claim_template(f"{name}-efa", gpu=uses_dra(pool))
        limits = {} if uses_dra(pool) else {resource or smoke_resources(pool)[0]: "1"}
        claims = {"efa": template["metadata"]["name"]}
        return [template, _pod(pool, name, _NVIDIA_SMI, limits, claims=claims)]
    if not uses_dra(pool):
        return [smoke_test_pod(pool, name, resource=resource)]
    return [gpu_claim_template(f"{name}-gpu", 1), dra_pod(pool, name, {"gpu": f"{name}-gpu"})]


def smoke_test_pod(
    pool: PoolRecord,
    name: str = SMOKE_TEST_NAME,
    gpus: int = 1,
    resource: str | None = None,
) -> dict[str, Any]:
    """A pod that asks for `gpus` of `resource` (default: the pool's first in
    `smoke_resources`), and on an EFA pool one EFA interface (which proves the EFA device plugin
    serves the node), selects the pool's nodes and tolerates its taints."""
    limits = {resource or smoke_resources(pool)[0]: str(gpus)}
    return _pod(pool, name, _NVIDIA_SMI, limits)


def gpu_claim_template(name: str, gpus: int) -> dict[str, Any]:
    """A ResourceClaimTemplate for `gpus` whole GPUs of the driver's DeviceClass."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "labels": {APP_LABEL: SMOKE_TEST_NAME}},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": GPU_DEVICE_CLASS,
                                "allocationMode": "ExactCount",
                                "count": gpus,
                            },
                        }
                    ]
                }
            }
        },
    }


def efa_claim_template(name: str, *, gpu: bool) -> dict[str, Any]:
    """A ResourceClaimTemplate for one EFA interface of the EFA DRA driver and, with `gpu`, one
    GPU of the NVIDIA DRA driver on the same PCIe root (a matchAttribute constraint)."""
    requests = [_exactly_one("efa", EFA_DEVICE_CLASS)]
    devices: dict[str, Any] = {"requests": requests}
    if gpu:
        requests.insert(0, _exactly_one("gpu", GPU_DEVICE_CLASS))
        devices["constraints"] = [
            {"requests": ["gpu", "efa"], "matchAttribute": PCIE_ROOT_ATTRIBUTE}
        ]
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "labels": {APP_LABEL: SMOKE_TEST_NAME}},
        "spec": {"spec": {"devices": devices}},
    }


def _exactly_one(request: str, device_class: str) -> dict[str, Any]:
    return {
        "name": request,
        "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1},
    }


def dra_pod(pool: PoolRecord, name: str, claims: dict[str, str]) -> dict[str, Any]:
    """The smoke pod of a DRA pool: nvidia-smi with the claims of `claims` (pod claim name ->
    its ResourceClaimTemplate), the EFA interface as `smoke_test_pod`'s."""
    return _pod(pool, name, _NVIDIA_SMI, {}, claims=claims)


def compute_domain(name: str, channel_template: str) -> dict[str, Any]:
    """A ComputeDomain of two nodes whose controller writes the channel ResourceClaimTemplate
    `channel_template`; numNodes makes its status Ready once both nodes' IMEX daemons are
    (the CRD's description of numNodes, v0.4.1)."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {"name": name, "labels": {APP_LABEL: SMOKE_TEST_NAME}},
        "spec": {
            "numNodes": COMPUTE_DOMAIN_NODES,
            "channel": {"resourceClaimTemplate": {"name": channel_template}},
        },
    }


def imex_pod(
    pool: PoolRecord, name: str, run: str, claims: dict[str, str], limits: dict[str, str]
) -> dict[str, Any]:
    """One of an UltraServer test's two pods: on its own node (anti-affinity on the hostname),
    with the channel (and on a DRA pool GPU) claims of `claims` and the GPU `limits` of a
    device-plugin pool, running `IMEX_CHECK`.

    No pod affinity keeps the two in one NVLink partition: the pool's node selector keeps them
    on the pool, whose nodes are one Capacity Block of one type in one zone (GP-ULTRA-02 and the
    Capacity Block rules), the instances of one UltraServer, one NVLink domain. The label that
    names a node's partition, `nvidia.com/gpu.clique`, is GPU Feature Discovery's, which runs
    only with the GPU Operator (the DRA driver reads the clique from NVML and writes none), and a
    required affinity term fails every node without its topologyKey: both pods would stay
    Pending. Whether the nodes share a clique is what `verify` reads from the ComputeDomain's
    status (cli/commands/verify/verifier.py)."""
    container = {"name": "imex-check", "command": ["bash", "-c", IMEX_CHECK]}
    pod = _pod(pool, name, container, limits, claims=claims)
    pod["metadata"]["labels"][RUN_LABEL] = run
    peers = {"labelSelector": {"matchLabels": {RUN_LABEL: run}}}
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {**peers, "topologyKey": HOSTNAME_LABEL}
            ]
        },
    }
    return pod


def _pod(
    pool: PoolRecord,
    name: str,
    container: dict[str, Any],
    limits: dict[str, str],
    claims: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod of the smoke test on the pool's nodes: `container` with the test image, `limits`
    (and one EFA interface on an EFA pool), and the DRA `claims` (pod claim name -> template)."""
    resources: dict[str, Any] = {}
    if pool.efa_interfaces and not uses_efa_dra(pool):
        limits = {**limits, EFA_RESOURCE: "1"}
    if limits:
        resources["limits"] = limits
    if claims:
        resources["claims"] = [{"name": claim} for claim in claims]
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(pool.node_selector),
        "tolerations": [dict(t) for t in pool.tolerations],
        "containers": [
            {
                "name": container["name"],
                "image": SMOKE_TEST_IMAGE,
                "command": list(container["command"]),
                "resources": resources,
            }
        ],
    }
    if claims:
        spec["resourceClaims"] = [
            {"name": claim, "resourceClaimTemplateName": template}
            for claim, template in claims.items()
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {APP_LABEL: SMOKE_TEST_NAME}},
        "spec": spec,
    }
