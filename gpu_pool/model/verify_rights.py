"""What `gpu-pool verify` reads from a cluster, cluster-wide: the one list its verify role's
ClusterRole is rendered from (gpu_pool/cdk/cluster/verifier.py), and the tests hold the command to
(tests/cli/test_verify_rights.py: every request verify makes against an API server enforcing
this ClusterRole is allowed).

Verify (gpu_pool/cli/commands/verify/, cli/inspect/) reads nodes and pods (the device plugin's,
the DRA kubelet plugin's and IMEX daemons, in their own namespaces), DaemonSets, the controllers'
Deployments, Karpenter's NodeClaims and NodePools, a pool's node class when it diagnoses a
stall (Karpenter's EC2NodeClass, or Auto Mode's NodeClass), DRA ResourceSlices, ResourceClaims
and DeviceClasses, and NVIDIA ComputeDomains.
"""

from __future__ import annotations

from gpu_pool.model import auto_mode_api, karpenter_api

# (API group, resources), read verbs only. The groups of kinds gpu-pool names elsewhere come
# from their modules; the core group is "".
VERIFY_READS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("nodes", "pods")),
    ("apps", ("daemonsets", "deployments")),
    (karpenter_api.NODE_POOL_API.split("/")[0], ("nodeclaims", "nodepools")),
    (karpenter_api.NODE_CLASS_GROUP, ("ec2nodeclasses",)),
    (auto_mode_api.NODE_CLASS_GROUP, ("nodeclasses",)),
    ("resource.k8s.io", ("resourceslices", "resourceclaims", "deviceclasses")),
    ("resource.nvidia.com", ("computedomains",)),
)
READ_VERBS = ("get", "list", "watch")
