"""GPU catalog: what each EC2 GPU instance type carries.

The node template Cluster Autoscaler builds at zero nodes advertises exactly the GPU count we tag,
so the count must be right for the instance type. Counts are EC2 DescribeInstanceTypes figures as
mirrored by Karpenter's generated instance types and Cluster Autoscaler's ec2_instance_types.go;
the catalog is ours because
aws-cdk-lib's own list rejects several current families (p5, p6-b200, g6f, gr6, g7e).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Architecture(StrEnum):
    X86_64 = "x86_64"
    ARM64 = "arm64"


@dataclass(frozen=True)
class MigProfile:
    """A MIG GPU instance profile, as NVIDIA's MIG user guide tabulates it per GPU."""

    name: str  # e.g. 1g.10gb: compute slices, then memory
    compute_slices: int
    memory_slices: int  # eighths of the GPU's memory (quarters on a 4-slice GPU)
    max_count: int  # instances of this profile one GPU holds


@dataclass(frozen=True)
class MigGpu:
    """A GPU that MIG partitions: its compute and memory slices and its profiles by name."""

    compute_slices: int
    memory_slices: int
    profiles: dict[str, MigProfile] = field(default_factory=dict)


def _mig_gpu(compute: int, memory: int, *profiles: tuple[str, int, int, int]) -> MigGpu:
    return MigGpu(compute, memory, {p[0]: MigProfile(*p) for p in profiles})


def _mig_7_slices(one: int, two: int, four: int, full: int) -> MigGpu:
    """A 7-compute, 8-memory-slice GPU (A100-80GB, H100, H200, B200): the same six profiles
    (and a media-extension 1g), named by their memory in GB: that of one, two and four memory
    slices, and the whole GPU's."""
    return _mig_gpu(
        7,
        8,
        (f"1g.{one}gb", 1, 1, 7),
        (f"1g.{one}gb+me", 1, 1, 1),
        (f"1g.{two}gb", 1, 2, 4),
        (f"2g.{two}gb", 2, 2, 3),
        (f"3g.{four}gb", 3, 4, 2),
        (f"4g.{four}gb", 4, 4, 1),
        (f"7g.{full}gb", 7, 8, 1),
    )


# MIG GPUs on EC2, from NVIDIA's Multi-Instance GPU user guide ("Supported GPUs" and "Supported
# MIG Profiles", https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html:
# fraction of memory and of SMs, instances available) and the GPU Operator's default MIG
# configurations (NVIDIA/gpu-operator v26.3.1 assets/state-mig-manager/0400_configmap.yaml). The
# guide also lists the A30 (1g.6gb ... 4g.24gb), which no EC2 type carries. A10G, L4, L40S, T4 and
# V100 have no MIG. B300 (p6-b300) is left out: its profiles were not in the guide read here.
A100_40GB = _mig_gpu(
    7,
    8,
    ("1g.5gb", 1, 1, 7),
    ("1g.5gb+me", 1, 1, 1),
    ("1g.10gb", 1, 2, 4),
    ("2g.10gb", 2, 2, 3),
    ("3g.20gb", 3, 4, 2),
    ("4g.20gb", 4, 4, 1),
    ("7g.40gb", 7, 8, 1),
)
A100_80GB = H100_80GB = _mig_7_slices(10, 20, 40, 80)
H200_141GB = _mig_7_slices(18, 35, 71, 141)
B200_180GB = _mig_7_slices(23, 45, 90, 180)
# RTX PRO 6000 Blackwell Server Edition: 4 compute and 4 memory slices, at most 4 instances.
RTX_PRO_6000_96GB = _mig_gpu(4, 4, ("1g.24gb", 1, 1, 4), ("2g.48gb", 2, 2, 2), ("4g.96gb", 4, 4, 1))


@dataclass(frozen=True)
class GpuFamily:
    """One instance family: its GPU, CPU architecture and GPUs per size."""

    family: str
    gpu_model: str  # value of the k8s.amazonaws.com/accelerator label
    architecture: Architecture
    gpus_by_size: dict[str, int]
    # Lowest NVIDIA driver branch that runs this GPU; the EKS AL2023 and Bottlerocket NVIDIA
    # AMIs carry 580 (amazon-eks-ami release notes; awslabs/amazon-eks-ami#2768 for g7).
    min_driver: int = 0
    note: str = ""
    # Whether EC2 DescribeInstanceTypes reports the GPUs. Karpenter counts GPUs from EC2's data
    # alone, so it sees none on fractional types and never launches them for a GPU request.
    ec2_counts_gpus: bool = True
    # Its GPU's MIG partitioning; None: the GPU has no MIG.
    mig: MigGpu | None = None
    # EFA interfaces per size, one per network card; sizes not listed have no EFA. EC2
    # DescribeInstanceTypes NetworkInfo.EfaInfo.MaximumEfaInterfaces, as Karpenter publishes it
    # (resource vpc.amazonaws.com/efa in aws/karpenter-provider-aws v1.14.1
    # website/content/en/docs/reference/instance-types.md).
    efa_by_size: dict[str, int] = field(default_factory=dict)
    # Per size, the network cards that carry an EFA-only interface, where EC2 documents a layout
    # other than one EFA interface on each card from card 0 (plan/capacity.py builds both).
    efa_cards_by_size: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # Sold only inside EC2 UltraServers (Capacity Blocks for ML), whose GPUs share one NVLink
    # domain across instances: that domain works only through IMEX, which the NVIDIA DRA
    # driver's ComputeDomains run (EKS user guide, "Use P6e-GB200 UltraServers with Amazon EKS").
    ultraserver: bool = False


@dataclass(frozen=True)
class GpuInstanceType:
    """A catalogued instance type, resolved from its name."""

    name: str
    family: GpuFamily
    gpu_count: int
    # EFA interfaces (network cards carrying one), 0: no EFA.
    efa_interfaces: int = 0
    # The cards carrying them, where not cards 0 to efa_interfaces - 1 (empty: those).
    efa_cards: tuple[int, ...] = ()
    # NVMe instance store, total GB; 0: none.
    instance_store_gb: int = 0

    @property
    def architecture(self) -> Architecture:
        return self.family.architecture

    @property
    def vcpus(self) -> int:
        """vCPUs (EC2 DefaultVCpus): 2 on a large, 4 per xlarge of the size, a metal its
        family's figure; so for every catalogued type (aws/karpenter-provider-aws v1.14.1
        website/content/en/docs/reference/instance-types.md, karpenter.k8s.aws/instance-cpu)."""
        size = self.name.split(".", 1)[1]
        if size == "metal":
            return _METAL_VCPUS[self.family.family]
        if size == "large":
            return 2
        return 4 * int(size.removesuffix("xlarge") or 1)


_METAL_VCPUS = {"g4dn": 96, "g5g": 64}
AMI_DRIVER_BRANCH = 580

_X86 = Architecture.X86_64
_ARM = Architecture.ARM64
_ONE_TO_16XL = {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1}
_G5_G6_SIZES = {**_ONE_TO_16XL, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8}
_ONE_EFA_FROM_8XL = {"8xlarge": 1, "12xlarge": 1, "16xlarge": 1, "24xlarge": 1, "48xlarge": 1}

_FAMILIES = [
    GpuFamily(
        "g4dn",
        "nvidia-t4",
        _X86,
        {**_ONE_TO_16XL, "12xlarge": 4, "metal": 8},
        efa_by_size={"8xlarge": 1, "12xlarge": 1, "16xlarge": 1, "metal": 1},
    ),
    GpuFamily("g5", "nvidia-a10g", _X86, dict(_G5_G6_SIZES), efa_by_size=dict(_ONE_EFA_FROM_8XL)),
    GpuFamily(
        "g5g",
        "nvidia-t4g",
        _ARM,
        {
            "xlarge": 1,
            "2xlarge": 1,
            "4xlarge": 1,
            "8xlarge": 1,
            "16xlarge": 2,
            "metal": 2,
        },
    ),
    GpuFamily("g6", "nvidia-l4", _X86, dict(_G5_G6_SIZES), efa_by_size=dict(_ONE_EFA_FROM_8XL)),
    GpuFamily(
        "g6e",
        "nvidia-l40s",
        _X86,
        dict(_G5_G6_SIZES),
        efa_by_size={**_ONE_EFA_FROM_8XL, "24xlarge": 2, "48xlarge": 4},
    ),
    GpuFamily("gr6", "nvidia-l4", _X86, {"4xlarge": 1, "8xlarge": 1}, efa_by_size={"8xlarge": 1}),
    # Fractional L4: EC2 reports 0 whole GPUs, the node shows one (partial) device, so the
    # node template must be told 1 or Cluster Autoscaler never picks the group.
    GpuFamily(
        "g6f",
        "nvidia-l4",
        _X86,
        {"large": 1, "xlarge": 1, "2xlarge": 1, "4xlarge": 1},
        note="fractional L4: one partial GPU per node",
        ec2_counts_gpus=False,
    ),
    GpuFamily(
        "gr6f",
        "nvidia-l4",
        _X86,
        {"4xlarge": 1},
        note="fractional L4: one partial GPU per node",
        ec2_counts_gpus=False,
    ),
    GpuFamily(
        "g7e",
        "nvidia-rtx-pro-6000",
        _X86,
        {
            "2xlarge": 1,
            "4xlarge": 1,
            "8xlarge": 1,
            "12xlarge": 2,
            "24xlarge": 4,
            "48xlarge": 8,
        },
        mig=RTX_PRO_6000_96GB,
        efa_by_size={"8xlarge": 1, "12xlarge": 1, "24xlarge": 2, "48xlarge": 4},
    ),
    # RTX PRO 4500 needs driver 595+, which the 580 AMIs lack (amazon-eks-ami#2768). Sizes are
    # not listed: any g7 type is refused before its GPU count would matter.
    GpuFamily("g7", "nvidia-rtx-pro-4500", _X86, {}, min_driver=595),
    GpuFamily("p3", "nvidia-v100", _X86, {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8}),
    GpuFamily("p3dn", "nvidia-v100", _X86, {"24xlarge": 8}, efa_by_size={"24xlarge": 1}),
    # p4d: A100 40GB; p4de: A100 80GB.
    GpuFamily(
        "p4d",
        "nvidia-a100",
        _X86,
        {"24xlarge": 8},
        mig=A100_40GB,
        efa_by_size={"24xlarge": 4},
    ),
    GpuFamily(
        "p4de",
        "nvidia-a100",
        _X86,
        {"24xlarge": 8},
        mig=A100_80GB,
        efa_by_size={"24xlarge": 4},
    ),
    GpuFamily(
        "p5",
        "nvidia-h100",
        _X86,
        {"4xlarge": 1, "48xlarge": 8},
        mig=H100_80GB,
        efa_by_size={"4xlarge": 1, "48xlarge": 32},
    ),
    GpuFamily(
        "p5e",
        "nvidia-h200",
        _X86,
        {"48xlarge": 8},
        mig=H200_141GB,
        efa_by_size={"48xlarge": 32},
    ),
    GpuFamily(
        "p5en",
        "nvidia-h200",
        _X86,
        {"48xlarge": 8},
        mig=H200_141GB,
        efa_by_size={"48xlarge": 16},
    ),
    GpuFamily(
        "p6-b200",
        "nvidia-b200",
        _X86,
        {"48xlarge": 8},
        mig=B200_180GB,
        efa_by_size={"48xlarge": 8},
    ),
    # Karpenter's data gives p6-b300.48xlarge 16 EFA interfaces, but not which network cards
    # carry them (the type has a separate ENA card): not offered for EFA until that is checked.
    GpuFamily("p6-b300", "nvidia-b300", _X86, {"48xlarge": 8}),
    # GB200 (Grace Blackwell): 4 GPUs and 144 Arm vCPUs per instance, sold only inside the
    # u-p6e-gb200x36 (9 instances) and u-p6e-gb200x72 (18) UltraServers (EC2 UG "Amazon EC2
    # UltraServers"; EKS UG "Use P6e-GB200 UltraServers with Amazon EKS"). The only UltraServer
    # with NVIDIA GPUs (trn2u is Trainium). EFA (Karpenter v1.14.1's generated data has only
    # the type's bandwidth): EC2 UG efa-acc-inst-types, "EFA configuration for P6e-GB200
    # instances": 17 network cards; card 0 is ENA only (100 Gbps); cards 1, 3, ..., 15 take
    # EFA-only interfaces (400 Gbps), cards 2, 4, ..., 16 ENA or EFA (200 Gbps); cards 2k-1
    # and 2k share one physical NIC, and each GPU sends over the cards 1 and 3, 5 and 7, 9 and
    # 11, 13 and 15. Its example for the most EFA bandwidth (1600 Gbps) puts one EFA-only
    # interface on cards 1, 5, 9 and 13, device index 0: 4 EFA devices per node, as the EKS
    # guide expects the EFA device plugin to advertise. No min_driver: the EKS guide recommends
    # the AL2023 NVIDIA AMI from release v20251103, whose driver 580 (AMI_DRIVER_BRANCH) runs
    # the type with coherent driver-based memory management (CDMM) against memory over-reporting.
    GpuFamily(
        "p6e-gb200",
        "nvidia-gb200",
        _ARM,
        {"36xlarge": 4},
        efa_by_size={"36xlarge": 4},
        efa_cards_by_size={"36xlarge": (1, 5, 9, 13)},
        ultraserver=True,
    ),
]

GPU_FAMILIES: dict[str, GpuFamily] = {f.family: f for f in _FAMILIES}

# NVMe instance store per family and size, total GB (EC2 DescribeInstanceTypes
# InstanceStorageInfo.TotalSizeInGB, as Karpenter publishes it, karpenter.k8s.aws/
# instance-local-nvme in aws/karpenter-provider-aws v1.14.1
# website/content/en/docs/reference/instance-types.md).
# Not listed: none (g5g, p3: EBS only). p6e-gb200, which that table lacks: 3 x 7500 GB (EKS UG
# "Use P6e-GB200 UltraServers with Amazon EKS": "3x 7.5TB instance store storage").
INSTANCE_STORE_GB: dict[str, dict[str, int]] = {
    "g4dn": {
        "xlarge": 125,
        "2xlarge": 225,
        "4xlarge": 225,
        "8xlarge": 900,
        "12xlarge": 900,
        "16xlarge": 900,
        "metal": 1800,
    },
    "g5": {
        "xlarge": 250,
        "2xlarge": 450,
        "4xlarge": 600,
        "8xlarge": 900,
        "12xlarge": 3800,
        "16xlarge": 1900,
        "24xlarge": 3800,
        "48xlarge": 7600,
    },
    "g6": {
        "xlarge": 250,
        "2xlarge": 450,
        "4xlarge": 600,
        "8xlarge": 900,
        "12xlarge": 3760,
        "16xlarge": 1880,
        "24xlarge": 3760,
        "48xlarge": 7520,
    },
    "g6e": {
        "xlarge": 250,
        "2xlarge": 450,
        "4xlarge": 600,
        "8xlarge": 900,
        "12xlarge": 3800,
        "16xlarge": 1900,
        "24xlarge": 3800,
        "48xlarge": 7600,
    },
    "gr6": {"4xlarge": 600, "8xlarge": 900},
    "g6f": {"large": 100, "xlarge": 100, "2xlarge": 200, "4xlarge": 450},
    "gr6f": {"4xlarge": 450},
    "g7e": {
        "2xlarge": 1900,
        "4xlarge": 1900,
        "8xlarge": 1900,
        "12xlarge": 3800,
        "24xlarge": 7600,
        "48xlarge": 15200,
    },
    "p3dn": {"24xlarge": 1800},
    "p4d": {"24xlarge": 8000},
    "p4de": {"24xlarge": 8000},
    "p5": {"4xlarge": 3800, "48xlarge": 30400},
    "p5e": {"48xlarge": 30400},
    "p5en": {"48xlarge": 30400},
    "p6-b200": {"48xlarge": 30400},
    "p6-b300": {"48xlarge": 30400},
    "p6e-gb200": {"36xlarge": 3 * 7500},
}


# Accelerated families that are not NVIDIA: the NVIDIA AMIs and device plugin do nothing there.
NON_NVIDIA_ACCELERATORS: dict[str, str] = {
    "g4ad": "AMD Radeon Pro V520",
    "dl1": "Habana Gaudi",
    "dl2q": "Qualcomm AI 100",
    "inf1": "AWS Inferentia",
    "inf2": "AWS Inferentia2",
    "trn1": "AWS Trainium",
    "trn1n": "AWS Trainium",
    "trn2": "AWS Trainium2",
}


class CatalogError(ValueError):
    """An instance type the catalog cannot resolve to an NVIDIA GPU type."""


def split_instance_type(name: str) -> tuple[str, str]:
    """Split `family.size`; raise CatalogError for anything else."""
    family, dot, size = name.partition(".")
    if not dot or not family or not size or "." in size:
        raise CatalogError(f"'{name}' is not an EC2 instance type name (expected family.size)")
    return family, size


def lookup(name: str) -> GpuInstanceType:
    """Resolve an instance type name to its GPU facts, or raise CatalogError saying why not."""
    family_name, size = split_instance_type(name)
    if family_name in NON_NVIDIA_ACCELERATORS:
        raise CatalogError(
            f"'{name}' carries {NON_NVIDIA_ACCELERATORS[family_name]}, not an NVIDIA GPU; "
            "the NVIDIA AMIs, device plugin and GPU Operator do nothing there"
        )
    family = GPU_FAMILIES.get(family_name)
    if family is None:
        raise CatalogError(
            f"'{name}' is not an NVIDIA GPU instance type in the catalog "
            f"(families: {', '.join(sorted(GPU_FAMILIES))})"
        )
    if family.min_driver > AMI_DRIVER_BRANCH:
        raise CatalogError(
            f"'{name}' ({family.gpu_model}) needs NVIDIA driver {family.min_driver} or newer; the "
            f"EKS NVIDIA AMIs carry {AMI_DRIVER_BRANCH} (amazon-eks-ami#2768), so its GPU is "
            "unusable: choose another family, e.g. g7e"
        )
    if size not in family.gpus_by_size:
        raise CatalogError(
            f"'{name}' is not a {family_name} size in the catalog "
            f"(sizes: {', '.join(family.gpus_by_size)})"
        )
    return GpuInstanceType(
        name,
        family,
        family.gpus_by_size[size],
        family.efa_by_size.get(size, 0),
        family.efa_cards_by_size.get(size, ()),
        INSTANCE_STORE_GB.get(family.family, {}).get(size, 0),
    )
