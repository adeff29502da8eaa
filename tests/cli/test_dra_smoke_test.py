"""The smoke test's DRA forms: ComputeDomains, ResourceClaimTemplates and pods, each with its
exact content. The API server judges them (resource.k8s.io/v1, core/v1, and the NVIDIA DRA
driver's CRD at the pinned chart version) in tests/e2e/test_dra_objects.py."""

import dataclasses
import json

import pytest
import yaml

from gpu_pool.cli.main import main
from gpu_pool.cli.smoke_test import smoke_test_objects, ultraserver
from gpu_pool.cli.sources import settings_pools
from gpu_pool.plan.dra import GPU_DEVICE_CLASS
from gpu_pool.plan.record import NodeGroupRecord
from gpu_pool.settings import load_settings
from tests.support.paths import FIXTURES, ROOT

CHART = FIXTURES / "charts" / "dra-driver-nvidia-gpu-0.4.1"
DRA_POOL = {"gpu_software": "dra-driver", "min_size": 1, "desired_size": 1}
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def dra_record():
    settings = load_settings(
        {"pools": {"gpu": {**DRA_POOL, "instance_types": ["g6e.xlarge"]}}}, None
    )
    (record,) = settings_pools(settings).records
    return record


def ultraserver_dra_record():
    """A DRA pool of p6e-gb200.36xlarge (4 GPUs, an UltraServer type in the catalog)."""
    return dataclasses.replace(
        dra_record(),
        node_groups=(NodeGroupRecord(("p6e-gb200.36xlarge",), gpus=4),),
        gpus_per_node=4,
    )


def eks_shape_record():
    """An UltraServer pool of EKS's shape (the default: GPUs through the GPU Operator's device
    plugin, the DRA driver for ComputeDomains only), on a Capacity Block."""
    pool = {
        "instance_types": ["p6e-gb200.36xlarge"],
        "zones": ["us-east-1a"],
        "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
    }
    (record,) = settings_pools(load_settings({"pools": {"gb200": pool}}, None)).records
    return record


@pytest.fixture
def ultraserver_record():
    return ultraserver_dra_record()


def test_the_gpu_device_class_is_the_one_the_drivers_chart_installs():
    """The chart's template, with its Helm conditionals taken out, names the DeviceClass."""
    text = (CHART / "templates" / "deviceclass-gpu.yaml").read_text()
    plain = "\n".join(line for line in text.splitlines() if "{{" not in line)
    (device_class,) = [d for d in yaml.safe_load_all(plain) if d]
    assert device_class["metadata"]["name"] == GPU_DEVICE_CLASS == "gpu.nvidia.com"


def test_a_dra_pool_claims_one_gpu_of_the_drivers_device_class():
    template, pod = smoke_test_objects(dra_record(), "smoke")
    assert template == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": "smoke-gpu",
            "labels": {"app.kubernetes.io/name": "gpu-pool-smoke-test"},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                        }
                    ]
                }
            }
        },
    }
    assert pod["metadata"]["name"] == "smoke"
    assert pod["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "smoke-gpu"}
    ]
    (container,) = pod["spec"]["containers"]
    # The claim, and no nvidia.com/gpu: no device plugin serves a DRA node.
    assert container["resources"] == {"claims": [{"name": "gpu"}]}
    assert container["command"] == ["nvidia-smi"]
    assert pod["spec"]["nodeSelector"] == {"gpu-pool.io/pool": "gpu"}
    assert pod["spec"]["tolerations"] == [TOLERATION]


def test_an_ultraserver_pool_runs_two_pods_in_one_compute_domain(ultraserver_record):
    domain, gpus, *pods = smoke_test_objects(ultraserver_record, "smoke")
    assert domain == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "smoke", "labels": {"app.kubernetes.io/name": "gpu-pool-smoke-test"}},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "smoke-channel"}}},
    }
    # Each pod has its node's four GPUs.
    assert gpus["metadata"]["name"] == "smoke-gpus"
    assert gpus["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    assert [p["metadata"]["name"] for p in pods] == ["smoke-0", "smoke-1"]
    peers = {"labelSelector": {"matchLabels": {"gpu-pool.io/smoke-test": "smoke"}}}
    for pod in pods:
        assert pod["metadata"]["labels"]["gpu-pool.io/smoke-test"] == "smoke"
        assert pod["spec"]["affinity"] == {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {**peers, "topologyKey": "kubernetes.io/hostname"}
                ]
            },
        }
        assert pod["spec"]["resourceClaims"] == [
            {"name": "gpus", "resourceClaimTemplateName": "smoke-gpus"},
            {"name": "imex-channel", "resourceClaimTemplateName": "smoke-channel"},
        ]
        (container,) = pod["spec"]["containers"]
        assert container["resources"] == {"claims": [{"name": "gpus"}, {"name": "imex-channel"}]}
        script = container["command"][2]
        assert "test -e /dev/nvidia-caps-imex-channels/channel0" in script
        assert "nvidia-smi -q | grep -i -A 4 '^ *fabric'" in script
        assert pod["spec"]["tolerations"] == [TOLERATION]


def test_an_ultraserver_pool_of_eks_shape_asks_for_the_device_plugins_gpus():
    """EKS's shape (the default: GPUs through the GPU Operator's device plugin, the DRA driver
    for ComputeDomains only): the same ComputeDomain and two pods, each claiming the domain's
    channel and asking for its node's four nvidia.com/gpu, with no GPU claim template (the
    driver publishes no gpu.nvidia.com device there)."""
    record = eks_shape_record()
    assert record.gpu_software == "gpu-operator"
    domain, *pods = smoke_test_objects(record, "smoke")
    assert domain["kind"] == "ComputeDomain"
    assert [p["metadata"]["name"] for p in pods] == ["smoke-0", "smoke-1"]
    for pod in pods:
        assert pod["spec"]["resourceClaims"] == [
            {"name": "imex-channel", "resourceClaimTemplateName": "smoke-channel"},
        ]
        (container,) = pod["spec"]["containers"]
        assert container["resources"] == {
            "limits": {"nvidia.com/gpu": "4"},
            "claims": [{"name": "imex-channel"}],
        }


def test_a_type_the_catalog_does_not_know_is_not_taken_for_an_ultraserver():
    record = dataclasses.replace(
        dra_record(), node_groups=(NodeGroupRecord(("x9z.48xlarge",), gpus=8),)
    )
    assert ultraserver(record) is False
    assert ultraserver(dra_record()) is False


def test_smoke_test_manifest_prints_a_dra_pools_claim_template_and_pod(tmp_path, capsys):
    config = tmp_path / "pools.json"
    config.write_text(json.dumps({"pools": {"gpu": DRA_POOL}}))
    argv = ["smoke-test-manifest", "--cdk-json", str(ROOT / "cdk.json"), "--config", str(config)]
    assert main(argv) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in documents] == ["ResourceClaimTemplate", "Pod"]
    assert documents[1]["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "gpu-pool-smoke-test-gpu"}
    ]
    assert main([*argv, "--resource", "nvidia.com/gpu"]) == 2
    assert capsys.readouterr().err == (
        "gpu-pool: --resource: pool 'gpu' does not advertise 'nvidia.com/gpu' "
        "(it advertises: gpu.nvidia.com)\n"
    )


def test_the_documented_dra_manifests_are_what_the_command_prints(tmp_path, capsys):
    """docs/verify-and-doctor.md shows the claim template and pod of a DRA pool named gpu."""
    from tests.support.docs_examples import yaml_examples

    config = tmp_path / "pools.json"
    config.write_text(json.dumps({"pools": {"gpu": DRA_POOL}}))
    argv = ["smoke-test-manifest", "--cdk-json", str(ROOT / "cdk.json"), "--config", str(config)]
    assert main(argv) == 0
    printed = list(yaml.safe_load_all(capsys.readouterr().out))
    documented = [
        e.data()
        for e in yaml_examples()
        if e.page == "docs/verify-and-doctor.md" and "smoke-test-manifest" in (e.partial or "")
    ]
    assert documented == printed
