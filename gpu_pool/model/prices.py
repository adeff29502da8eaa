"""On-demand prices of the catalogued GPU instance types, for what a pool costs at its max size.

USD per instance-hour, Linux, on-demand, us-east-1: Karpenter's generated pricing table
(aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go at commit
6fc13b5236fd04fd16ff3f9dc7490d0813994099, "generated at 2026-07-20T13:44:30Z for us-east-1",
from the AWS Price List API). Other regions and prices after that date differ; a type the table
lacks (p5e, sold as Capacity Blocks) has no price here, and readers say "unknown".
"""

from __future__ import annotations

import math

from gpu_pool.model.catalog import GPU_FAMILIES, GpuFamily

# The region the table prices; other regions' prices differ.
PRICE_REGION = "us-east-1"
PRICE_SOURCE = (
    f"on-demand Linux {PRICE_REGION}, AWS Price List as of 2026-07-20 "
    "(aws/karpenter-provider-aws zz_generated.pricing_aws.go)"
)

ON_DEMAND_USD_PER_HOUR: dict[str, float] = {
    "g4dn.12xlarge": 3.912,
    "g4dn.16xlarge": 4.352,
    "g4dn.2xlarge": 0.752,
    "g4dn.4xlarge": 1.204,
    "g4dn.8xlarge": 2.176,
    "g4dn.metal": 7.824,
    "g4dn.xlarge": 0.526,
    "g5.12xlarge": 5.672,
    "g5.16xlarge": 4.096,
    "g5.24xlarge": 8.144,
    "g5.2xlarge": 1.212,
    "g5.48xlarge": 16.288,
    "g5.4xlarge": 1.624,
    "g5.8xlarge": 2.448,
    "g5.xlarge": 1.006,
    "g5g.16xlarge": 2.744,
    "g5g.2xlarge": 0.556,
    "g5g.4xlarge": 0.828,
    "g5g.8xlarge": 1.372,
    "g5g.metal": 2.744,
    "g5g.xlarge": 0.42,
    "g6.12xlarge": 4.6016,
    "g6.16xlarge": 3.3968,
    "g6.24xlarge": 6.6752,
    "g6.2xlarge": 0.9776,
    "g6.48xlarge": 13.3504,
    "g6.4xlarge": 1.3232,
    "g6.8xlarge": 2.0144,
    "g6.xlarge": 0.8048,
    "g6e.12xlarge": 10.49264,
    "g6e.16xlarge": 7.57719,
    "g6e.24xlarge": 15.06559,
    "g6e.2xlarge": 2.24208,
    "g6e.48xlarge": 30.13118,
    "g6e.4xlarge": 3.00424,
    "g6e.8xlarge": 4.52856,
    "g6e.xlarge": 1.861,
    "g6f.2xlarge": 0.475,
    "g6f.4xlarge": 0.95,
    "g6f.large": 0.202,
    "g6f.xlarge": 0.2375,
    "g7e.12xlarge": 8.28608,
    "g7e.24xlarge": 16.57216,
    "g7e.2xlarge": 3.36312,
    "g7e.48xlarge": 33.14432,
    "g7e.4xlarge": 3.99816,
    "g7e.8xlarge": 5.26824,
    "gr6.4xlarge": 1.5392,
    "gr6.8xlarge": 2.4464,
    "gr6f.4xlarge": 1.066,
    "p3.16xlarge": 24.48,
    "p3.2xlarge": 3.06,
    "p3.8xlarge": 12.24,
    "p3dn.24xlarge": 31.212,
    "p4d.24xlarge": 21.957642,
    "p4de.24xlarge": 27.44705,
    "p5.48xlarge": 55.04,
    "p5.4xlarge": 6.88,
    "p5en.48xlarge": 63.296,
    "p6-b200.48xlarge": 113.9328,
    "p6-b300.48xlarge": 142.416,
}


def on_demand_usd_per_hour(instance_type: str) -> float | None:
    """The type's on-demand hourly price in us-east-1; None where the table has none."""
    return ON_DEMAND_USD_PER_HOUR.get(instance_type)


# Families the table has no on-demand price for. p5e is sold as Capacity Blocks only: priced as
# p5en, the same H200 GPU. g7's GPU needs a driver the EKS NVIDIA AMIs lack, so catalog.lookup
# refuses its types and no node group has one; should that change before the table prices it,
# it ranks after every priced family. p6e-gb200 is sold only as UltraServer Capacity Blocks
# and no other GPU is the same: it ranks after every priced family too (its pools are reserved,
# and reserved groups rank first whatever their price: NodeGroupPlan.scale_up_cost).
_PRICED_AS = {"p5e": "p5en"}
_UNPRICED_USD_PER_GPU_HOUR = {"g7": math.inf, "p6e-gb200": math.inf}


def usd_per_gpu_hour(family: GpuFamily) -> float:
    """The family's on-demand USD per GPU-hour: its cheapest priced size's price over that
    size's GPUs. It ranks families for Cluster Autoscaler's scale-up choice
    (NodeGroupPlan.scale_up_cost), so only the order matters."""
    if family.family in _UNPRICED_USD_PER_GPU_HOUR:
        return _UNPRICED_USD_PER_GPU_HOUR[family.family]
    priced = GPU_FAMILIES[_PRICED_AS.get(family.family, family.family)]
    sizes = [
        (price, gpus)
        for size, gpus in priced.gpus_by_size.items()
        if (price := on_demand_usd_per_hour(f"{priced.family}.{size}")) is not None
    ]
    price, gpus = min(sizes)
    return price / gpus
