"""The rules about `instance_store: raid0` (plan/instance_store.py): a type with no instance
store to stripe (catalog INSTANCE_STORE_GB, from EC2 DescribeInstanceTypes
InstanceStorageInfo), and nodes gpu-pool cannot pass the setting to."""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error
from gpu_pool.plan.gpu_software import is_bottlerocket
from gpu_pool.plan.pool import PoolPlan


def check_instance_store(plan: PoolPlan) -> Iterator[Finding]:
    """A pool whose nodes stripe their instance store (explicitly or by default)."""
    if not plan.instance_store_raid0:
        return
    if plan.provisioner == "auto-mode":
        yield error(
            "GP-STORE-02",
            f"{plan.setting}.instance_store",
            "'raid0' with provisioner: auto-mode: EKS Auto Mode sets up its nodes' storage "
            "itself, and its NodeClass has no instance store setting: remove instance_store",
        )
        return
    if plan.provisioner == "cluster-autoscaler" and is_bottlerocket(plan.settings):
        yield error(
            "GP-STORE-03",
            f"{plan.setting}.instance_store",
            "'raid0' on Bottlerocket: gpu-pool stripes the instance store through nodeadm's "
            "NodeConfig (spec.instance.localStorage), which only AL2023 reads: use ami_family: "
            "AL2023, or remove instance_store",
        )
    types = {t.name: t for group in plan.entries for t in group}
    for name in sorted(types):
        if not types[name].instance_store_gb:
            yield error(
                "GP-STORE-01",
                f"{plan.setting}.instance_store",
                f"'raid0' with {name}, which has no instance store (EC2 "
                "DescribeInstanceTypes InstanceStorageInfo; EBS only): remove instance_store, "
                "or use types with an NVMe instance store",
            )
