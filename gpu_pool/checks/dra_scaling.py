"""How a pool with the NVIDIA DRA driver scales: decided from the autoscalers' own source.

Cluster Autoscaler (kubernetes/autoscaler, tags cluster-autoscaler-1.34.5, -1.35.2 and -1.36.1,
the pins for Kubernetes 1.34, 1.35 and 1.36, every minor a DRA pool may run on) judges a pending
pod against a template node per node group:
- a group with a ready node: that node as CA's snapshot holds it, its ResourceSlices included
  (processors/nodeinfosprovider/mixed_nodeinfos_processor.go:108 at 1.36.1, :109 at 1.35.2,
  :97 at 1.34.5, through simulator/node_info_utils.go:77 (:76 at 1.34.5), which copies the
  node's LocalResourceSlices);
- an empty group: the cloud provider's TemplateNodeInfo. The AWS provider's builds the node from
  the instance type and the ASG's node-template tags (aws_manager.go buildNodeFromTemplate, :268
  at 1.35.2 and 1.36.1, :263 at 1.34.5: capacity, labels, taints) and passes no ResourceSlices
  (cloudprovider/aws/aws_cloud_provider.go TemplateNodeInfo: `framework.NewNodeInfo(node, nil,
  ...)` at :423 at 1.36.1, :414 at 1.35.2, :413 at 1.34.5).
  No ASG tag or EKS API value can add one. The clusterapi provider needed an annotation of its
  own for this (capacity.cluster-autoscaler.kubernetes.io/dra-driver, kubernetes/autoscaler
  #7724 and PR #7804: clusterapi_nodegroup.go:379), and even that failed from zero until #10199
  was fixed (PR #10200, after 1.36.1).
CA simulates claims only with `--enable-dynamic-resource-allocation` (config/flags/flags.go:227
at 1.34.5, default false; locked true at 1.35.2 :231 and 1.36.1 :236), which gpu-pool sets for a
DRA pool (cdk/autoscaling/autoscaler.py dynamic_resource_args).
So a pod whose GPUs come through a ResourceClaim fits no empty group: CA never starts a DRA
group's first node (read again for issue #37 at cluster-autoscaler-1.36.1, still the newest tag
for 1.36: aws_cloud_provider.go:423 passes nil slices, so GP-DRA-10 stays). Once a node runs, CA
copies its slices for the next ones. CA also caches a group's last template
(node-info-cache-expire-time, 10 years by default) in memory, which a restart of CA loses:
scaling from zero after a scale-down works only by luck.

The rules: a node-group pool with the DRA driver keeps `min_size >= 1` (each node group is its
own template, so each keeps one node). A Capacity Block pool cannot: its groups stay at 0 until
the block starts (checks/reserved.py, GP-TRAIN-06/07), so it runs as static capacity for the
block's length, sized through the EKS API when the block starts (docs/dra-and-ultraservers.md).

Karpenter pools are not judged here: from 1.15.0, with settings.enableDRA (which gpu-pool sets
for a cluster with a Karpenter DRA pool, plan/dra.py), Karpenter evaluates a pending pod's
claims against device metadata built into the release for each supported instance type, so it
launches a DRA pool's first node from zero. checks/dra.py refuses the types without that
metadata (GP-DRA-06) and an older Karpenter (GP-DRA-07).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_pool.model.findings import Finding, error, warning
from gpu_pool.plan.pool import PoolPlan

# Where the AWS provider's empty-group template node gets no ResourceSlices, at the newest
# pinned Cluster Autoscaler (the same call is at line 414 of 1.35.2 and 413 of 1.34.5).
AWS_TEMPLATE_NODE_SOURCE = (
    "kubernetes/autoscaler cluster-autoscaler-1.36.1 cloudprovider/aws/aws_cloud_provider.go:423"
)


def check_dra_scaling(plan: PoolPlan) -> Iterator[Finding]:
    """A node-group pool with the DRA driver against what Cluster Autoscaler can scale."""
    pool, prefix = plan.settings, plan.setting
    if plan.gpu_software != "dra-driver" or plan.provisioner != "cluster-autoscaler":
        return
    if plan.capacity.capacity_block:
        yield warning(
            "GP-DRA-11",
            f"{prefix}.capacity_reservation",
            "a capacity-block with gpu_software dra-driver: Cluster Autoscaler cannot start a "
            "DRA node group's first node (its AWS template node has no ResourceSlices, "
            f"{AWS_TEMPLATE_NODE_SOURCE}), and a block's groups stay at 0 until the block "
            "starts; when it starts, run the group as static capacity: aws eks "
            "update-nodegroup-config --scaling-config minSize=N,desiredSize=N with N the "
            "block's instances, and minSize=0 again before it ends",
        )
    elif pool.min_size == 0:
        yield error(
            "GP-DRA-10",
            f"{prefix}.min_size",
            "0 with gpu_software dra-driver: Cluster Autoscaler builds an empty node group's "
            f"template node without ResourceSlices ({AWS_TEMPLATE_NODE_SOURCE}), so a pod's "
            "ResourceClaim fits no empty group and the group never gets its first node: set "
            "min_size (and desired_size) 1 or more; CA copies a running node's ResourceSlices "
            "for the next ones",
        )
