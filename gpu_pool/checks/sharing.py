"""The rules about a pool's GPU sharing (`sharing`): settings of one mode only, what each mode
needs, and MIG layouts the pool's GPU can hold (NVIDIA Multi-Instance GPU user guide, "Supported
MIG Profiles"); sharing only where the count of shares reaches the autoscaler."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gpu_pool.model.catalog import GPU_FAMILIES, GpuInstanceType, MigGpu
from gpu_pool.model.findings import Finding, error
from gpu_pool.model.versions import KARPENTER
from gpu_pool.plan.gpu_software import is_bottlerocket
from gpu_pool.plan.pool import PoolPlan

# Which mode each sharing setting belongs to, in the order messages name them.
_MODE_OF = {
    "replicas": "time-slicing",
    "rename": "time-slicing",
    "strategy": "mig",
    "profile": "mig",
    "layout": "mig",
}


def check_sharing(plan: PoolPlan) -> Iterator[Finding]:
    """Every rule about the pool's `sharing` settings."""
    sharing, prefix = plan.settings.sharing, f"{plan.setting}.sharing"
    for name, mode in _MODE_OF.items():
        if name in sharing.model_fields_set and mode != sharing.mode:
            yield error(
                "GP-SHARE-01",
                f"{prefix}.{name}",
                f"is for mode {mode}, but mode is {sharing.mode}: remove it, or set mode: {mode}",
            )
    if sharing.mode == "none" or plan.gpu_software == "dra-driver":
        return  # the DRA driver takes no sharing settings: GP-DRA-04 (checks/dra.py)
    mode = f"'{sharing.mode}'"
    if plan.provisioner == "karpenter":
        yield error(
            "GP-SHARE-02",
            f"{prefix}.mode",
            f"{mode} with provisioner: karpenter: Karpenter counts a node's physical GPUs from "
            "EC2's data, not the shares its device plugin advertises (kubernetes-sigs/"
            "karpenter#2140), so it launches a node per pod asking for nvidia.com/gpu and none "
            "for other GPU resources; NodeOverlay, which could tell it, is alpha in Karpenter "
            f"{KARPENTER.version}: use provisioner: cluster-autoscaler",
        )
        return
    if plan.provisioner == "auto-mode":
        yield error(
            "GP-SHARE-03",
            f"{prefix}.mode",
            f"{mode} with provisioner: auto-mode: Auto Mode runs its own device plugin and its "
            "NodeClass has no setting to share GPUs with (EKS user guide, automode/"
            "auto-accelerated.adoc, create-node-class.adoc), and its Karpenter counts physical "
            "GPUs: use provisioner: cluster-autoscaler",
        )
        return
    if is_bottlerocket(plan.settings):
        yield error(
            "GP-SHARE-04",
            f"{prefix}.mode",
            f"{mode} on Bottlerocket: its NVIDIA AMI runs its own device plugin, which takes "
            "sharing from Bottlerocket settings (settings.kubelet-device-plugins.nvidia: "
            "time-slicing, and MIG with one profile) that gpu-pool does not write: use "
            "ami_family: AL2023",
        )
        return
    if sharing.mode == "time-slicing":
        if sharing.replicas is None:
            yield error(
                "GP-SHARE-05",
                f"{prefix}.replicas",
                "required with mode time-slicing: how many pods share each GPU, 2 to 48",
            )
        return
    yield from _check_mig(plan, prefix)


def _check_mig(plan: PoolPlan, prefix: str) -> Iterator[Finding]:
    sharing = plan.settings.sharing
    if plan.gpu_software != "gpu-operator":
        chosen = (
            f"'{plan.gpu_software}'"
            if plan.settings.gpu_software
            else f"the default '{plan.gpu_software}'"
        )
        yield error(
            "GP-SHARE-06",
            f"{plan.setting}.gpu_software",
            f"{chosen} with sharing mode mig: only the GPU Operator's MIG manager "
            "partitions the GPUs (the device plugin advertises only partitions that exist): "
            "set gpu_software: gpu-operator",
        )
    if sharing.strategy is None:
        yield error(
            "GP-SHARE-07",
            f"{prefix}.strategy",
            "required with mode mig: single (one profile on every GPU) or mixed (a layout of "
            "profiles)",
        )
        return
    wrong, right = ("layout", "profile") if sharing.strategy == "single" else ("profile", "layout")
    if wrong in sharing.model_fields_set:
        yield error(
            "GP-SHARE-08",
            f"{prefix}.{wrong}",
            f"is for strategy {'mixed' if wrong == 'layout' else 'single'}; strategy "
            f"{sharing.strategy} takes {right}: use {right}",
        )
    if right == "profile":
        wanted = {sharing.profile: 1} if sharing.profile is not None else None
    else:
        wanted = sharing.layout
    if wanted is None:
        yield error(
            "GP-SHARE-09",
            f"{prefix}.{right}",
            "required with strategy single: the profile every GPU is split into, e.g. 1g.10gb"
            if right == "profile"
            else "required with strategy mixed: profile -> instances per GPU, e.g. "
            "{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}",
        )
        return
    gpus: dict[int, tuple[GpuInstanceType, MigGpu]] = {}
    for index, group in enumerate(plan.entries):
        for gpu_type in group:
            mig = gpu_type.family.mig
            if mig is None:
                yield error(
                    "GP-SHARE-10",
                    f"{plan.setting}.instance_types[{index}]",
                    f"'{gpu_type.name}' ({gpu_type.family.gpu_model}) has no MIG; MIG GPUs on "
                    f"EC2: {_mig_families()}: use one of those, or sharing mode time-slicing",
                )
            else:
                gpus.setdefault(id(mig), (gpu_type, mig))
    if len(gpus) > 1:
        yield error(
            "GP-SHARE-11",
            f"{prefix}.mode",
            f"'mig' with instance types of different MIG GPUs "
            f"({', '.join(t.name for t, _ in gpus.values())}); one layout is for one GPU: put "
            "them in separate pools",
        )
    for gpu_type, mig in gpus.values():
        yield from _check_profiles(f"{prefix}.{right}", wanted, gpu_type, mig)


def _check_profiles(
    setting: str, wanted: Mapping[str, int], gpu_type: GpuInstanceType, mig: MigGpu
) -> Iterator[Finding]:
    """The `wanted` profiles (instances per GPU: a single profile's one, or a mixed layout) are
    the GPU's, and fit its compute and memory slices (a single profile, one instance, always
    does: every profile fits its GPU at its count)."""
    gpu = f"{gpu_type.name}'s {gpu_type.family.gpu_model}"
    unknown = [p for p in wanted if p not in mig.profiles]
    for name in unknown:
        yield error(
            "GP-SHARE-12",
            setting,
            f"'{name}' is not a MIG profile of {gpu}: use one of {', '.join(mig.profiles)}",
        )
    if unknown:
        return
    for name, count in wanted.items():
        most = mig.profiles[name].max_count
        if count > most:
            yield error(
                "GP-SHARE-13",
                setting,
                f"{count} x '{name}', but {gpu} holds at most {most}: lower its count",
            )
    compute = sum(mig.profiles[p].compute_slices * n for p, n in wanted.items())
    memory = sum(mig.profiles[p].memory_slices * n for p, n in wanted.items())
    if compute > mig.compute_slices or memory > mig.memory_slices:
        yield error(
            "GP-SHARE-14",
            setting,
            f"needs {compute} compute and {memory} memory slices; {gpu} has "
            f"{mig.compute_slices} and {mig.memory_slices}: take instances out of the layout",
        )


def _mig_families() -> str:
    """The catalogued families whose GPU has MIG, e.g. `p4d (nvidia-a100), ...`."""
    return ", ".join(f"{f.family} ({f.gpu_model})" for f in GPU_FAMILIES.values() if f.mig)
