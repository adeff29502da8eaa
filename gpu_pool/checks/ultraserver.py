"""The rules about UltraServer pools: instances whose GPUs share one NVLink domain across
instances (catalog `ultraserver`: p6e-gb200.36xlarge, inside u-p6e-gb200x36 and x72).

Sources: EKS UG "Use P6e-GB200 UltraServers with Amazon EKS" (Kubernetes 1.33 or newer; the
NVIDIA DRA driver, whose ComputeDomains run the IMEX daemons that multi-node NVLink needs;
managed or self-managed node groups, not Karpenter nor Auto Mode; Capacity Blocks with a custom
launch template; desired size 0 before an upgrade: GP-TRAIN-07 holds every Capacity Block
pool's desired size at 0; the AL2023 ARM NVIDIA AMI, which carries the node components the type
needs), EC2 UG "Capacity Blocks for ML" (the only way UltraServers are sold).

Node labels: none needed from the pool. The driver (dra-driver-nvidia-gpu v0.4.1) reads
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
# The node label the DRA driver's kubelet plugin writes per ComputeDomain (v0.4.1
# cmd/compute-domain-kubelet-plugin/computedomain.go:41), and its clique form.
COMPUTE_DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
# EKS runs P6e-GB200 from this minor (the DRA driver itself needs 1.34: checks/dra.py).
MIN_MINOR = (1, 33)


def _ultraserver_types(plan: PoolPlan) -> list[GpuInstanceType]:
    return [t for group in plan.entries for t in group if t.family.ultraserver]


def check_ultraserver(plan: PoolPlan) -> Iterator[Finding]:
    """An UltraServer pool on its own: provisioner, ComputeDomains, capacity, labels, AMI
    release (its EFA layout is the catalog's, from EC2's user guide; GP-ULTRA-04, which refused
    EFA, is retired). Its AMI is AL2023_ARM_64_NVIDIA, derived from ami_family AL2023 and the
    type's architecture, as the EKS guide names it: Bottlerocket is refused for every DRA pool
    (checks/dra.py, GP-DRA-03) and an ami_type of the other architecture for every pool
    (GP-POOL-07). ComputeDomains on any other pool are GP-ULTRA-08."""
    types = _ultraserver_types(plan)
    if not types:
        if plan.compute_domains:
            yield error(
                "GP-ULTRA-08",
                f"{plan.setting}.compute_domains",
                "'dra-driver' without an UltraServer type: ComputeDomains run IMEX for GPUs "
                "that share an NVLink domain across instances (catalog: p6e-gb200.36xlarge), "
                "which these instances do not: remove compute_domains",
            )
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
    if not plan.compute_domains:
        yield error(
            "GP-ULTRA-01",
            f"{prefix}.compute_domains",
            f"'none' with {names}: the GPUs of an UltraServer's instances share one NVLink "
            "domain only through IMEX, which the NVIDIA DRA driver's ComputeDomains run "
            f"({EKS_GUIDE}): remove compute_domains (the default is dra-driver here)",
        )
    elif plan.gpu_software == "device-plugin":
        yield warning(
            "GP-ULTRA-09",
            f"{prefix}.gpu_software",
            f"'device-plugin' with {names}: no GPU Feature Discovery runs on the pool (the "
            "device plugin chart brings one only with a Node Feature Discovery release of its "
            "own), so its nodes get no nvidia.com/gpu.clique label, which the EKS guide's jobs "
            "select their NVLink domain by; the GPU Operator runs both: remove gpu_software "
            "(the default is gpu-operator here)",
        )
    yield from _ami_release(plan, names)
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


# The EKS guide's AMI floor for P6e-GB200: "EKS-optimized AMI release v20251103 or later,
# which includes NVIDIA driver version 580" (CDMM, against memory over-reporting). An AL2023
# release version is `<kubernetes>-<YYYYMMDD>` (EKS API Nodegroup releaseVersion, e.g.
# 1.34.2-20251103), so its date part orders releases.
MIN_AMI_RELEASE = "20251103"


def _ami_release(plan: PoolPlan, names: str) -> Iterator[Finding]:
    """A pinned `ami_release_version` against the guide's floor for GB200."""
    release = plan.settings.ami_release_version
    date = "" if release is None else release.rsplit("-", 1)[1]
    if not (date.isdigit() and len(date) == len(MIN_AMI_RELEASE)) or date >= MIN_AMI_RELEASE:
        return
    yield error(
        "GP-ULTRA-10",
        f"{plan.setting}.ami_release_version",
        f"'{release}' with {names}: EKS asks for AMI release v{MIN_AMI_RELEASE} or later, "
        f"with NVIDIA driver 580 ({EKS_GUIDE}): pin a release dated {MIN_AMI_RELEASE} or "
        "later, or remove ami_release_version (the newest)",
    )


def check_ultraserver_minor(plan: PoolPlan, kubernetes_minor: str | None) -> Iterator[Finding]:
    """An UltraServer pool against its cluster's Kubernetes minor (None: unknown). A pool that
    runs the DRA driver (for its GPUs or its ComputeDomains) is held to the driver's 1.34 by
    checks/dra.py (GP-DRA-01), which covers EKS's 1.33: this rule speaks for the pool that
    does not run the driver (GP-ULTRA-01)."""
    types = _ultraserver_types(plan)
    if not types or kubernetes_minor is None or plan.compute_domains:
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
