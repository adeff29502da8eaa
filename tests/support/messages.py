"""Text that several tests expect word for word."""

# The pool settings an unknown key's message lists, in the schema's order
# (gpu_pool/settings/pool.py PoolSettings).
POOL_KEYS = (
    "name, provisioner, instance_types, zones, ami_family, ami_type, ami_release_version, "
    "capacity_type, min_size, desired_size, max_size, disk_size_gib, volume_kms_key_arn, "
    "imds_hop_limit, labels, taints, gpu_software, compute_domains, instance_store, "
    "gpu_operator, versions, karpenter, sharing, capacity_reservation, efa, efa_software, repair"
)
