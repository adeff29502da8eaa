"""The settings the synthesized test stacks use, by name (each synthesized once per session;
tools/snapshot_templates.py synthesizes them all)."""

DEFAULT: dict = {}

# Several groups across two zones, including types aws-cdk-lib's Nodegroup rejects.
MULTI = {
    "region": "us-east-1",
    "account": "123456789012",
    "pool": {
        "zones": ["us-east-1a", "us-east-1b"],
        "instance_types": [
            "g5.xlarge",
            "g6e.12xlarge",
            "p5.48xlarge",
            "p6-b200.48xlarge",
            "g5g.xlarge",
        ],
    },
}

EXISTING = {
    "region": "eu-west-1",
    "account": "123456789012",
    "cluster": {
        "name": "platform-prod",
        "existing": {
            "kubectl_provider_service_token": "arn:aws:lambda:eu-west-1:123456789012:function:kubectl-onEvent",
            "kubectl_provider_role_arn": "arn:aws:iam::123456789012:role/kubectl-handler",
            "subnets_by_zone": {
                "eu-west-1a": ["subnet-0aaaaaaaaaaaaaaaa"],
                "eu-west-1b": ["subnet-0bbbbbbbbbbbbbbbb", "subnet-0cccccccccccccccc"],
            },
        },
    },
    "pool": {"zones": ["eu-west-1b"], "instance_types": ["g6.xlarge"]},
}

# The three pools: inference on two 1-GPU types, training on 8-GPU p5 behind a second
# taint, and a Spot pool whose labels are a subset of inference's.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
THREE_POOLS = {
    "pools": {
        "inference": {
            "instance_types": ["g6e.xlarge", "g5.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "inference"},
        },
        "training": {
            "instance_types": ["p5.48xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "training"},
            "taints": [
                GPU_TAINT,
                {"key": "dedicated", "value": "training", "effect": "NoSchedule"},
            ],
        },
        "spot": {
            "instance_types": ["g6.xlarge"],
            "capacity_type": "SPOT",
            "labels": {"accelerator": "nvidia"},
        },
    }
}

# Karpenter pools only: AL2023 x86 in two zones, ARM (g5g), and Bottlerocket on Spot.
KMS_KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
KARPENTER = {
    "region": "us-east-1",
    "account": "123456789012",
    "pools": {
        "inference": {
            "provisioner": "karpenter",
            "instance_types": ["g5.xlarge", "g6.xlarge"],
            "zones": ["us-east-1a", "us-east-1b"],
        },
        "arm": {
            "provisioner": "karpenter",
            "instance_types": ["g5g.xlarge", "g5g.16xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "arm"},
            "max_size": 3,
            "karpenter": {
                "consolidate_after": "10m",
                "expire_after": "Never",
                "termination_grace_period": "2h",
            },
        },
        "rocket": {
            "provisioner": "karpenter",
            "ami_family": "BOTTLEROCKET",
            "instance_types": ["g6e.xlarge"],
            "capacity_type": "SPOT",
            "labels": {"accelerator": "nvidia", "workload": "rocket"},
            "disk_size_gib": 300,
            "volume_kms_key_arn": KMS_KEY,
        },
    },
}

# A node group pool whose volumes a customer key of the stack's account encrypts: the key's
# grant to EC2 Auto Scaling's service-linked role (issue 38 item 4).
NODE_GROUP_KMS = {
    "region": "us-east-1",
    "account": "123456789012",
    "pool": {"instance_types": ["g5.xlarge"], "volume_kms_key_arn": KMS_KEY},
}

# One pool of each provisioner on one cluster.
MIXED = {
    "pools": {
        "inference": {"instance_types": ["g5.xlarge"]},
        "training": {
            "provisioner": "karpenter",
            "instance_types": ["p5.48xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "training"},
        },
    }
}

# The GPU Operator serving a Karpenter pool, beside a Karpenter pool and a node-group pool that
# run their own device plugin: the operator is cluster-wide, so the other two must opt out.
KARPENTER_OPERATOR = {
    "pools": {
        "train": {
            "provisioner": "karpenter",
            "gpu_software": "gpu-operator",
            "instance_types": ["g6e.xlarge", "g6e.12xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "train"},
        },
        "serve": {
            "provisioner": "karpenter",
            "instance_types": ["g5.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "serve"},
        },
        "batch": {
            "instance_types": ["g6.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "batch"},
        },
    }
}

# EKS Auto Mode pools only: an inference pool in two zones, an ARM pool and a Spot pool with a
# KMS-encrypted disk and an explicit lifetime.
AUTO_MODE = {
    "region": "us-east-1",
    "account": "123456789012",
    "pools": {
        "inference": {
            "provisioner": "auto-mode",
            "instance_types": ["g6.xlarge", "g6e.xlarge"],
            "zones": ["us-east-1a", "us-east-1b"],
        },
        "arm": {
            "provisioner": "auto-mode",
            "instance_types": ["g5g.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "arm"},
        },
        "spot": {
            "provisioner": "auto-mode",
            "instance_types": ["g5.xlarge"],
            "capacity_type": "SPOT",
            "labels": {"accelerator": "nvidia", "workload": "spot"},
            "disk_size_gib": 300,
            "volume_kms_key_arn": KMS_KEY,
            "karpenter": {"expire_after": "168h", "consolidate_after": "10m"},
        },
    },
}

# One pool of each provisioner on one cluster, each behind a taint of its own so no pod is
# pending to two of them.
MIXED_AUTO_MODE = {
    "pools": {
        "serve": {"instance_types": ["g5.xlarge"]},
        "batch": {
            "provisioner": "karpenter",
            "instance_types": ["g6.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "batch"},
            "taints": [{"key": "nvidia.com/gpu", "value": "karpenter"}],
        },
        "auto": {
            "provisioner": "auto-mode",
            "instance_types": ["g6e.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "auto"},
            "taints": [{"key": "nvidia.com/gpu", "value": "auto-mode"}],
        },
    }
}

BOTTLEROCKET = {"pool": {"ami_family": "BOTTLEROCKET"}, "autoscaler": {"enabled": False}}

OPERATOR = {"pool": {"gpu_software": "gpu-operator"}}

# GPU metrics through the CloudWatch Observability add-on, whose agent has a role of its own.
CLOUDWATCH_METRICS = {"metrics": {"gpu": "cloudwatch"}}


# Every named settings set above, for tools that synthesize them all.
# Training pools (#22): a Capacity Block of p5.48xlarge with EFA and its on-demand fallback for
# the same workload, an ODCR pool of node groups, and a Karpenter pool on an ODCR with EFA that
# falls back to on-demand itself.
CAPACITY_BLOCK_ID = "cr-0123456789abcdef0"
ODCR_ID = "cr-0fedcba9876543210"
# The existing cluster placement group `kodcr`'s reservation was created in.
ODCR_PLACEMENT_GROUP = "p5en-training"
TRAINING_LABELS = {"workload": "training"}
TRAINING = {
    "region": "us-east-1",
    "account": "123456789012",
    "pools": {
        "train": {
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "efa": True,
            "labels": TRAINING_LABELS,
            "capacity_reservation": {"type": "capacity-block", "id": CAPACITY_BLOCK_ID},
        },
        "train-od": {
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "efa": True,
            "labels": TRAINING_LABELS,
        },
        "odcr": {
            "instance_types": ["g6e.12xlarge"],
            "capacity_reservation": {"type": "odcr", "id": ODCR_ID},
        },
        "kodcr": {
            "provisioner": "karpenter",
            "labels": {"workload": "training-karpenter"},
            "instance_types": ["p5en.48xlarge"],
            "zones": ["us-east-1a"],
            "efa": True,
            "capacity_reservation": {
                "type": "odcr",
                "id": ODCR_ID,
                "fallback": "on-demand",
                "placement_group": ODCR_PLACEMENT_GROUP,
            },
        },
    },
}

# A DRA inference pool (the NVIDIA DRA driver, issue #30) with a taint of its own beside a
# device-plugin pool, both scaled by Cluster Autoscaler on Kubernetes 1.35.
DRA_TAINT = {"key": "dedicated", "value": "dra", "effect": "NoSchedule"}
DRA = {
    "cluster": {"kubernetes_version": "1.35"},
    "pools": {
        "dra": {
            "gpu_software": "dra-driver",
            "instance_types": ["g6e.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "dra"},
            "taints": [GPU_TAINT, DRA_TAINT],
            "min_size": 1,
            "desired_size": 1,
        },
        "plugin": {
            "instance_types": ["g6.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "plugin"},
        },
    },
}

# Karpenter 1.15's DRA support (issue #37): a Karpenter DRA pool beside a Karpenter
# device-plugin pool, each selected by its own pool label, and a node-group DRA pool behind a
# taint of its own (the Karpenter pools share another, so no GPU pod fits pools of both
# provisioners), one driver release for both.
KARPENTER_TAINT = {"key": "dedicated", "value": "karpenter", "effect": "NoSchedule"}
KARPENTER_DRA = {
    "pools": {
        "dra": {
            "provisioner": "karpenter",
            "gpu_software": "dra-driver",
            "instance_types": ["g6e.xlarge", "p5.48xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "dra"},
            "taints": [GPU_TAINT, KARPENTER_TAINT],
        },
        "plugin": {
            "provisioner": "karpenter",
            "instance_types": ["g6.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "plugin"},
            "taints": [GPU_TAINT, KARPENTER_TAINT],
        },
        "nodes": {
            "gpu_software": "dra-driver",
            "instance_types": ["g6.2xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "nodes"},
            "taints": [GPU_TAINT, DRA_TAINT],
            "min_size": 1,
            "desired_size": 1,
        },
    },
}

# A P6e-GB200 UltraServer pool as EKS's guide builds it ("Use P6e-GB200 UltraServers with
# Amazon EKS"), every choice gpu-pool's default: the GPU Operator's device plugin for the GPUs,
# the DRA driver for ComputeDomains only.
ULTRASERVER = {
    "region": "us-east-1",
    "account": "123456789012",
    "cluster": {"kubernetes_version": "1.35"},
    "pools": {
        "gb200": {
            "instance_types": ["p6e-gb200.36xlarge"],
            "zones": ["us-east-1a"],
            "labels": TRAINING_LABELS,
            "max_size": 18,
            "capacity_reservation": {"type": "capacity-block", "id": CAPACITY_BLOCK_ID},
            "efa": True,
        },
    },
}
# Repair turned off on a node group pool and a Karpenter pool (docs/gpu-health.md).
REPAIR_OFF = {
    "pools": {
        "ng": {"repair": {"enabled": False}},
        "k": {
            "provisioner": "karpenter",
            "labels": {"workload": "k"},
            "repair": {"enabled": False},
        },
    }
}
# docs/existing-clusters.md's smallest config: a cluster given by its name alone (its facts from
# the lookup, or placeholders until then), for which the stack builds its own kubectl provider.
EXISTING_BY_NAME = {
    "account": "123456789012",
    "region": "us-east-1",
    "cluster": {"name": "inference", "existing": True},
    "pool": {"instance_types": ["g6e.xlarge"]},
}

# The imported cluster, with the node monitoring agent add-on created by the app.
EXISTING_WITH_AGENT = {
    **EXISTING,
    "cluster": {
        **EXISTING["cluster"],
        "existing": {**EXISTING["cluster"]["existing"], "node_monitoring_agent": True},
    },
}

# An Auto Mode pool whose pods get their GPUs through ResourceClaims: on Kubernetes 1.36 (the
# default) Auto Mode's nodes run the NVIDIA DRA driver themselves (issue #37 item 3).
AUTO_MODE_DRA = {
    "pools": {
        "claims": {
            "provisioner": "auto-mode",
            "gpu_software": "dra-driver",
            "instance_types": ["g6e.xlarge"],
            "labels": {"accelerator": "nvidia", "workload": "claims"},
        }
    }
}

# Two EFA node-group pools in one zone: one with the NVIDIA DRA driver and the EFA DRA driver
# (aws-dranet), one on the device plugins (issue #37 item 4).
EFA_DRA = {
    "region": "us-east-1",
    "account": "123456789012",
    "pools": {
        "dra": {
            "gpu_software": "dra-driver",
            "efa": True,
            "efa_software": "dra-driver",
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "labels": {"workload": "efa-dra"},
            "taints": [GPU_TAINT, DRA_TAINT],
            "min_size": 1,
            "desired_size": 1,
        },
        "plugin": {
            "efa": True,
            "instance_types": ["p5.48xlarge"],
            "zones": ["us-east-1a"],
            "labels": {"workload": "efa-plugin"},
        },
    },
}

NAMED_SETTINGS: dict[str, dict] = {
    "multi": MULTI,
    "existing": EXISTING,
    "three-pools": THREE_POOLS,
    "karpenter": KARPENTER,
    "mixed": MIXED,
    "karpenter-operator": KARPENTER_OPERATOR,
    "auto-mode": AUTO_MODE,
    "mixed-auto-mode": MIXED_AUTO_MODE,
    "bottlerocket": BOTTLEROCKET,
    "operator": OPERATOR,
    "training": TRAINING,
    "dra": DRA,
    "karpenter-dra": KARPENTER_DRA,
    "auto-mode-dra": AUTO_MODE_DRA,
    "efa-dra": EFA_DRA,
    "ultraserver": ULTRASERVER,
    "repair-off": REPAIR_OFF,
    "existing-with-agent": EXISTING_WITH_AGENT,
}

# One pool of each of node groups and Karpenter, with the CloudWatch agent, in the other
# partitions' Regions (China, GovCloud): the IAM simulation runs there once (issue 38 item 7).
PARTITION_REGIONS = {"aws-cn": "cn-north-1", "aws-us-gov": "us-gov-west-1"}
IN_PARTITION = {
    partition: {
        **MIXED,
        "metrics": {"gpu": "cloudwatch"},
        "region": region,
        "account": "123456789012",
    }
    for partition, region in PARTITION_REGIONS.items()
}


MIXED_LAYOUT = {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}

# One cluster, four pools: time-slicing on 1- and 4-GPU types, renamed shares, whole GPUs, and
# mixed MIG through the GPU Operator.
SHARING = {
    "pools": {
        "slices": {
            "instance_types": ["g6.xlarge", "g6.12xlarge"],
            "labels": {"workload": "slices"},
            "sharing": {"mode": "time-slicing", "replicas": 4},
        },
        "shared": {
            "instance_types": ["g5.xlarge"],
            "labels": {"workload": "shared"},
            "sharing": {"mode": "time-slicing", "replicas": 8, "rename": True},
        },
        "whole": {"instance_types": ["g6e.xlarge"], "labels": {"workload": "whole"}},
        "mig": {
            "instance_types": ["p5.48xlarge"],
            "labels": {"workload": "mig"},
            "gpu_software": "gpu-operator",
            "sharing": {"mode": "mig", "strategy": "mixed", "layout": MIXED_LAYOUT},
        },
    }
}
