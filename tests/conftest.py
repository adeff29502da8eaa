"""Shared settings for the synthesized stacks; each is synthesized once per session."""

import pytest

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
            "karpenter": {"consolidate_after": "10m", "termination_grace_period": "24h"},
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

BOTTLEROCKET = {"pool": {"ami_family": "BOTTLEROCKET"}, "autoscaler": {"enabled": False}}

OPERATOR = {"pool": {"gpu_software": "gpu-operator"}}


@pytest.fixture(scope="session")
def default_template():
    from tests.cfn import synth

    return synth(DEFAULT)


@pytest.fixture(scope="session")
def multi_template():
    from tests.cfn import synth

    return synth(MULTI)


@pytest.fixture(scope="session")
def three_pools_template():
    from tests.cfn import synth

    return synth(THREE_POOLS)


@pytest.fixture(scope="session")
def karpenter_template():
    from tests.cfn import synth

    return synth(KARPENTER)


@pytest.fixture(scope="session")
def mixed_template():
    from tests.cfn import synth

    return synth(MIXED)


@pytest.fixture(scope="session")
def existing_template():
    from tests.cfn import synth

    return synth(EXISTING)


@pytest.fixture(scope="session")
def aws_endpoint():
    """A local AWS API (moto's server) on a free 127.0.0.1 port, for the whole session."""
    import socket

    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def aws_api(aws_endpoint, monkeypatch):
    """boto3 clients anywhere in the process (handler code included) talk to the local API."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    return aws_endpoint
