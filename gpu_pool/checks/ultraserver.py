"""The rules about UltraServer pools: instances whose GPUs share one NVLink domain across
instances (catalog `ultraserver`: p6e-gb200.36xlarge, inside u-p6e-gb200x36 and x72).

Sources: EKS UG "Use P6e-GB200 UltraServers with Amazon EKS" (Kubernetes 1.33 or newer; the
NVIDIA DRA driver, whose ComputeDomains run the IMEX daemons that multi-node NVLink needs;
managed or self-managed node groups, not Karpenter nor Auto Mode; Capacity Blocks with a custom
launch template; desired size 0 before an upgrade: GP-TRAIN-07 holds every Capacity Block
pool's desired size at 0; the AL2023 ARM NVIDIA AMI, which carries the node components the type
needs), EC2 UG "Capacity Blocks for ML" (the only way UltraServers are sold).

Node labels: none needed from the pool. The driver (NVIDIA/k8s-dra-driver-gpu v25.12.0) reads
each node's NVLink clique from the GPUs themselves (cmd/compute-domain-kubelet-plugin/nvlib.go
getCliqueID: NVML GetGpuFabricInfo's cluster UUID and clique id), not from the
`nvidia.com/gpu.clique` label GPU feature discovery writes; and its kubelet plugin labels a node
`resource.nvidia.com/computeDomain=<uid>` itself when a ComputeDomain's claim lands there, the
label the domain's IMEX DaemonSet selects (templates/compute-domain-daemon.tmpl.yaml, which
tolerates every taint). A pool that set that label would break it: the plugin refuses a claim
on a node labelled for another domain (computedomain.go:318-320), so the rule refuses it.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.catalog import GpuInstanceType
from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.model.versions import minor_key
from gpu_pool.plan.capacity import ReservationFacts
from gpu_pool.plan.pool import PoolPlan

EKS_GUIDE = 'EKS UG "Use P6e-GB200 UltraServers with Amazon EKS"'
# The node label the DRA driver's kubelet plugin writes per ComputeDomain (v25.12.0
# cmd/compute-domain-kubelet-plugin/computedomain.go:41), and its clique form.
COMPUTE_DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
# EKS runs P6e-GB200 from this minor (the DRA driver itself needs 1.34: checks/dra.py).
MIN_MINOR = (1, 33)


def _ultraserver_types(plan: PoolPlan) -> list[GpuInstanceType]:
    return [t for group in plan.entries for t in group if t.family.ultraserver]


def check_ultraserver(plan: PoolPlan) -> Iterator[Finding]:
    """An UltraServer pool on its own: provisioner, GPU software, capacity, labels (its EFA
    layout is the catalog's, from EC2's user guide; GP-ULTRA-04, which refused EFA, is
    retired). Its AMI is AL2023_ARM_64_NVIDIA, derived from ami_family AL2023 and the type's
    architecture, as the EKS guide names it: Bottlerocket is refused for every DRA pool
    (checks/dra.py, GP-DRA-03) and an ami_type of the other architecture for every pool
    (GP-POOL-07)."""
    types = _ultraserver_types(plan)
    if not types:
        return
    pool, prefix = plan.settings, plan.setting
    names = ", ".join(t.name for t in types)
    if plan.provisioner != "cluster-autoscaler":
        yield error(
            "GP-ULTRA-03",
            f"{prefix}.provisioner",
            f"{plan.provisioner} with {names}: EKS runs UltraServers on managed or self-managed "
            f"node groups only, not on Karpenter or EKS Auto Mode ({EKS_GUIDE}): use provisioner: "
            "cluster-autoscaler",
        )
        return  # the other provisioners' GPU software and AMIs are their own rules'
    if plan.gpu_software != "dra-driver":
        yield error(
            "GP-ULTRA-01",
            f"{prefix}.gpu_software",
            f"'{plan.gpu_software}' with {names}: the GPUs of an UltraServer's instances share "
            "one NVLink domain only through IMEX, which the NVIDIA DRA driver's ComputeDomains "
            f"run ({EKS_GUIDE}): set gpu_software: dra-driver",
        )
    reservation = pool.capacity_reservation
    if reservation is None or not reservation.capacity_block:
        given = "unset" if reservation is None else f"type {reservation.type}"
        yield error(
            "GP-ULTRA-02",
            f"{prefix}.capacity_reservation",
            f"{given} with {names}: UltraServers are sold only as Capacity Blocks for ML (EC2 UG "
            '"Capacity Blocks for ML"): set type: capacity-block and the block\'s id',
        )
    for key in pool.labels:
        if key == COMPUTE_DOMAIN_LABEL or key.startswith(f"{COMPUTE_DOMAIN_LABEL}."):
            yield error(
                "GP-ULTRA-05",
                f"{prefix}.labels",
                f"'{key}' is written by the NVIDIA DRA driver per ComputeDomain (its IMEX "
                "daemons select it), and it refuses a claim on a node labelled for another "
                "domain: remove it",
            )


def check_ultraserver_minor(plan: PoolPlan, kubernetes_minor: str | None) -> Iterator[Finding]:
    """An UltraServer pool against its cluster's Kubernetes minor (None: unknown). A pool with
    the DRA driver is held to the driver's 1.34 by checks/dra.py (GP-DRA-01), which covers
    EKS's 1.33: this rule speaks for the pool that does not run the driver yet (GP-ULTRA-01)."""
    types = _ultraserver_types(plan)
    if not types or kubernetes_minor is None or plan.gpu_software == "dra-driver":
        return
    key = minor_key(kubernetes_minor)
    if key is not None and key < MIN_MINOR:
        yield error(
            "GP-ULTRA-06",
            f"{plan.setting}.instance_types",
            f"{types[0].name} needs Kubernetes 1.33 or newer on EKS ({EKS_GUIDE}), and the "
            f"NVIDIA DRA driver it needs runs on 1.34 or newer; the cluster runs "
            f"{kubernetes_minor}: set cluster.kubernetes_version to 1.34 or newer",
        )


def check_ultraserver_block(plan: PoolPlan, facts: ReservationFacts) -> Iterator[Finding]:
    """An UltraServer pool's size against its Capacity Block as EC2 describes it (looked up
    once and cached in cdk.context.json). A block of a whole UltraServer (9 instances for
    x36, 18 for x72) is billed whole: a smaller max_size leaves its NVLink domain part idle.
    A larger one is GP-TRAIN-17's."""
    if not _ultraserver_types(plan) or plan.settings.max_size >= facts.count:
        return
    yield warning(
        "GP-ULTRA-07",
        f"{plan.setting}.max_size",
        f"{plan.settings.max_size}, but UltraServer block {facts.reservation_id} "
        f"(cdk.context.json) holds {facts.count} instances, every one billed for the block's "
        f"length and part of its NVLink domain: set {facts.count}",
    )
