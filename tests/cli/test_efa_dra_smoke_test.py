"""The smoke test of an EFA pool on the EFA DRA driver (`efa_software: dra-driver`): one EFA
claimed from the driver's DeviceClass and, on a DRA pool, aligned with its GPU by PCIe root;
the DeviceClass checked against the vendored aws-dranet chart's. The API server judges the claim
templates and pods (resource.k8s.io/v1, core/v1) in tests/e2e/test_dra_objects.py."""

import yaml

from gpu_pool.cli.smoke_test import smoke_test_objects
from gpu_pool.cli.sources import settings_pools
from gpu_pool.plan.efa_dra import EFA_DEVICE_CLASS
from gpu_pool.settings import load_settings
from tests.support.paths import FIXTURES

CHART = FIXTURES / "charts" / "aws-dranet-1.0.0"
EFA_DRA = {
    "instance_types": ["p5.48xlarge"],
    "zones": ["us-east-1a"],
    "efa": True,
    "efa_software": "dra-driver",
    "min_size": 1,
    "desired_size": 1,
}
LABELS = {"app.kubernetes.io/name": "gpu-pool-smoke-test"}


def record(**pool):
    settings = load_settings(
        {"region": "us-east-1", "account": "123456789012", "pools": {"gpu": {**EFA_DRA, **pool}}},
        None,
    )
    (found,) = settings_pools(settings).records
    return found


def exactly_one(name, device_class):
    return {
        "name": name,
        "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1},
    }


def test_the_efa_device_class_is_the_one_the_drivers_chart_installs():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["deviceClass"] == {"create": True, "name": EFA_DEVICE_CLASS}
    assert EFA_DEVICE_CLASS == "efa.networking.k8s.aws"


def test_a_dra_pool_claims_a_gpu_and_an_efa_on_one_pcie_root():
    template, pod = smoke_test_objects(record(gpu_software="dra-driver"), "smoke")
    assert template == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "smoke-efa", "labels": LABELS},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        exactly_one("gpu", "gpu.nvidia.com"),
                        exactly_one("efa", "efa.networking.k8s.aws"),
                    ],
                    "constraints": [
                        {
                            "requests": ["gpu", "efa"],
                            "matchAttribute": "resource.kubernetes.io/pcieRoot",
                        }
                    ],
                }
            }
        },
    }
    assert pod["spec"]["resourceClaims"] == [
        {"name": "efa", "resourceClaimTemplateName": "smoke-efa"}
    ]
    (container,) = pod["spec"]["containers"]
    # No nvidia.com/gpu and no vpc.amazonaws.com/efa: neither device plugin serves the node.
    assert container["resources"] == {"claims": [{"name": "efa"}]}


def test_a_device_plugin_pool_counts_its_gpu_and_claims_its_efa():
    template, pod = smoke_test_objects(record(), "smoke")
    assert template["spec"]["spec"]["devices"] == {
        "requests": [exactly_one("efa", "efa.networking.k8s.aws")]
    }
    (container,) = pod["spec"]["containers"]
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": "1"},
        "claims": [{"name": "efa"}],
    }


def test_an_efa_device_plugin_pool_keeps_counting_its_efa():
    (pod,) = smoke_test_objects(record(efa_software="device-plugin"), "smoke")
    (container,) = pod["spec"]["containers"]
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"}
    }
