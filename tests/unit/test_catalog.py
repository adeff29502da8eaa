import pytest

from gpu_pool.model import catalog
from gpu_pool.model.catalog import Architecture, CatalogError


@pytest.mark.parametrize(
    ("name", "gpus", "arch", "model"),
    [
        ("g5.xlarge", 1, Architecture.X86_64, "nvidia-a10g"),
        ("g5.12xlarge", 4, Architecture.X86_64, "nvidia-a10g"),
        ("g5.48xlarge", 8, Architecture.X86_64, "nvidia-a10g"),
        ("g4dn.12xlarge", 4, Architecture.X86_64, "nvidia-t4"),
        ("g4dn.metal", 8, Architecture.X86_64, "nvidia-t4"),
        ("g5g.xlarge", 1, Architecture.ARM64, "nvidia-t4g"),
        ("g5g.16xlarge", 2, Architecture.ARM64, "nvidia-t4g"),
        ("g6.xlarge", 1, Architecture.X86_64, "nvidia-l4"),
        ("g6e.12xlarge", 4, Architecture.X86_64, "nvidia-l40s"),
        ("g6e.48xlarge", 8, Architecture.X86_64, "nvidia-l40s"),
        ("gr6.8xlarge", 1, Architecture.X86_64, "nvidia-l4"),
        ("g6f.xlarge", 1, Architecture.X86_64, "nvidia-l4"),
        ("gr6f.4xlarge", 1, Architecture.X86_64, "nvidia-l4"),
        ("g7e.12xlarge", 2, Architecture.X86_64, "nvidia-rtx-pro-6000"),
        ("g7e.48xlarge", 8, Architecture.X86_64, "nvidia-rtx-pro-6000"),
        ("p3.8xlarge", 4, Architecture.X86_64, "nvidia-v100"),
        ("p3dn.24xlarge", 8, Architecture.X86_64, "nvidia-v100"),
        ("p4d.24xlarge", 8, Architecture.X86_64, "nvidia-a100"),
        ("p4de.24xlarge", 8, Architecture.X86_64, "nvidia-a100"),
        ("p5.4xlarge", 1, Architecture.X86_64, "nvidia-h100"),
        ("p5.48xlarge", 8, Architecture.X86_64, "nvidia-h100"),
        ("p5e.48xlarge", 8, Architecture.X86_64, "nvidia-h200"),
        ("p5en.48xlarge", 8, Architecture.X86_64, "nvidia-h200"),
        ("p6-b200.48xlarge", 8, Architecture.X86_64, "nvidia-b200"),
        ("p6-b300.48xlarge", 8, Architecture.X86_64, "nvidia-b300"),
        ("p6e-gb200.36xlarge", 4, Architecture.ARM64, "nvidia-gb200"),
    ],
)
def test_gpu_facts_per_instance_type(name, gpus, arch, model):
    resolved = catalog.lookup(name)
    assert (resolved.gpu_count, resolved.architecture, resolved.family.gpu_model) == (
        gpus,
        arch,
        model,
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("g4ad.xlarge", "'g4ad.xlarge' carries AMD Radeon Pro V520, not an NVIDIA GPU"),
        ("dl1.24xlarge", "'dl1.24xlarge' carries Habana Gaudi, not an NVIDIA GPU"),
        ("inf2.xlarge", "'inf2.xlarge' carries AWS Inferentia2, not an NVIDIA GPU"),
        ("c5.xlarge", "'c5.xlarge' is not an NVIDIA GPU instance type in the catalog"),
        ("g5.3xlarge", "'g5.3xlarge' is not a g5 size in the catalog"),
        ("g5", "'g5' is not an EC2 instance type name (expected family.size)"),
        ("g7.2xlarge", "'g7.2xlarge' (nvidia-rtx-pro-4500) needs NVIDIA driver 595 or newer"),
    ],
)
def test_refuses_what_it_cannot_vouch_for(name, message):
    with pytest.raises(CatalogError) as err:
        catalog.lookup(name)
    assert str(err.value).startswith(message)


# EC2 MaximumEfaInterfaces as Karpenter v1.14.1 publishes it (vpc.amazonaws.com/efa in
# website/content/en/docs/reference/instance-types.md); 0: no EFA.
@pytest.mark.parametrize(
    ("name", "interfaces"),
    [
        ("p4d.24xlarge", 4),
        ("p4de.24xlarge", 4),
        ("p5.4xlarge", 1),
        ("p5.48xlarge", 32),
        ("p5e.48xlarge", 32),
        ("p5en.48xlarge", 16),
        ("p6-b200.48xlarge", 8),
        ("p3dn.24xlarge", 1),
        ("g5.8xlarge", 1),
        ("g5.48xlarge", 1),
        ("g6.12xlarge", 1),
        ("g6e.24xlarge", 2),
        ("g6e.48xlarge", 4),
        ("g7e.48xlarge", 4),
        ("g4dn.metal", 1),
        ("gr6.8xlarge", 1),
        ("g5.4xlarge", 0),
        ("g6.xlarge", 0),
        ("g6f.large", 0),
        ("p3.16xlarge", 0),
        # 16 EFA interfaces, but which cards carry them is not verified: refused for EFA.
        ("p6-b300.48xlarge", 0),
        # EC2 UG "EFA configuration for P6e-GB200 instances": one EFA-only interface per GPU.
        ("p6e-gb200.36xlarge", 4),
    ],
)
def test_efa_interfaces_per_instance_type(name, interfaces):
    assert catalog.lookup(name).efa_interfaces == interfaces


def test_only_p6e_gb200_puts_its_efa_interfaces_on_cards_of_its_own():
    """EC2 UG efa-acc-inst-types: P6e-GB200's card 0 is ENA only and its EFA-only interfaces go
    on cards 1, 5, 9 and 13; every other EFA type has one per card from card 0."""
    assert catalog.lookup("p6e-gb200.36xlarge").efa_cards == (1, 5, 9, 13)
    assert catalog.lookup("p5.48xlarge").efa_cards == ()


# NVIDIA's MIG user guide, "Supported MIG Profiles" (the H100 80GB and H200 141GB tables):
# profile -> (compute slices, memory slices, instances one GPU holds).
H100_80GB_PROFILES = {
    "1g.10gb": (1, 1, 7),
    "1g.10gb+me": (1, 1, 1),
    "1g.20gb": (1, 2, 4),
    "2g.20gb": (2, 2, 3),
    "3g.40gb": (3, 4, 2),
    "4g.40gb": (4, 4, 1),
    "7g.80gb": (7, 8, 1),
}
H200_141GB_PROFILES = {
    "1g.18gb": (1, 1, 7),
    "1g.18gb+me": (1, 1, 1),
    "1g.35gb": (1, 2, 4),
    "2g.35gb": (2, 2, 3),
    "3g.71gb": (3, 4, 2),
    "4g.71gb": (4, 4, 1),
    "7g.141gb": (7, 8, 1),
}


@pytest.mark.parametrize(
    ("sizes", "gpu", "table"),
    [
        ((10, 20, 40, 80), catalog.H100_80GB, H100_80GB_PROFILES),
        ((18, 35, 71, 141), catalog.H200_141GB, H200_141GB_PROFILES),
    ],
)
def test_a_seven_slice_gpu_has_nvidias_profile_table(sizes, gpu, table):
    """The helper that builds the 7-compute, 8-memory-slice GPUs, called here (the catalog
    calls it once, at import), gives the guide's table, and the catalog holds what it gives."""
    built = catalog._mig_7_slices(*sizes)
    assert (built.compute_slices, built.memory_slices) == (7, 8)
    assert {
        name: (p.name, p.compute_slices, p.memory_slices, p.max_count)
        for name, p in built.profiles.items()
    } == {name: (name, *row) for name, row in table.items()}
    assert built == gpu
