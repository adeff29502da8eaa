"""`gpu-pool verify` and `doctor` on DRA pools, against the fake API server (its DRA semantics
are documented in tests/support/fake_kube.py)."""

import json

import pytest

from tests.cli.test_dra_smoke_test import DRA_POOL, dra_record, ultraserver_record  # noqa: F401
from tests.support.command import run
from tests.support.fake_kube import (
    SCALE_UP,
    Scenario,
    device_plugin_pod,
    dra_kubelet_plugin,
    dra_plugin_pod,
    domain_status,
    imex_daemon_pod,
    node,
    resource_slice,
)

NODE = "ip-10-0-1-5.ec2.internal"
A, B = "ip-10-0-3-7.ec2.internal", "ip-10-0-3-8.ec2.internal"
UNALLOCATABLE = (
    "FailedScheduling",
    "0/3 nodes are available: 1 cannot allocate all claims, 2 node(s) didn't match Pod's node "
    "affinity/selector.",
)


@pytest.fixture
def dra_config(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text(json.dumps({"pools": {"gpu": DRA_POOL}}))
    return ["--config", str(path)]


def assembly(tmp_path, record):
    """A cloud assembly holding only `record`, as a synthesized app's pool writes it."""
    out = tmp_path / "cdk.out"
    out.mkdir()
    entry = {"type": "gpu-pool.io/pool-record", "data": record.to_json()}
    manifest = {
        "version": "48.0.0",
        "artifacts": {
            "GpuPool": {
                "type": "aws:cloudformation:stack",
                "metadata": {"/GpuPool/Pool": [entry]},
            }
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return ["--cdk-out", str(out)]


DEVICE_CLASSES = ["gpu.nvidia.com", "compute-domain-default-channel.nvidia.com"]


def dra_scenario(**kw):
    """A DRA pool: the driver's kubelet plugin DaemonSet instead of the device plugin's, and
    its DeviceClasses."""
    return Scenario(**{"daemon_sets": [dra_kubelet_plugin()], "device_classes": DEVICE_CLASSES, **kw})


def stage_lines(out):
    return [line.split("] ", 1)[1].split(":")[0] for line in out.splitlines() if line.startswith("[")]


def test_verify_follows_a_dra_pod_through_the_drivers_stages(tmp_path, capsys, dra_config):
    scenario = dra_scenario(
        events=[(2, SCALE_UP)],
        nodes=[(4, node(gpus=0))],
        later_pods=[(5, dra_plugin_pod())],
        resource_slices=[(6, resource_slice())],
        scheduled_at=8,
        succeeded_at=10,
    )
    code, fake = run(tmp_path, scenario, *dra_config)
    out = capsys.readouterr().out
    assert code == 0, out
    (pod,) = fake.created
    template = f"{pod['metadata']['name']}-gpu"
    assert stage_lines(out) == [
        f"submitted pod default/{pod['metadata']['name']} (ResourceClaim of gpu.nvidia.com",
        "pending",
        "scale-up",
        "node joined",
        "node ready",
        "driver running",
        "devices published",
        "claim allocated",
        "scheduled",
        "pod succeeded; nvidia-smi output",
    ]
    assert f"devices published: 1 GPU(s) of gpu.nvidia.com on {NODE}" in out
    assert f"claim allocated: gpu.nvidia.com/{NODE}/gpu-0" in out
    assert pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template}]
    # The template first, deleted after the pod (whose generated claim the garbage collector
    # deletes with it).
    assert [(k, n) for k, n, _ in fake.created_objects] == [("ResourceClaimTemplate", template)]
    assert fake.deleted == [pod["metadata"]["name"]]
    assert fake.deleted_objects == [("ResourceClaimTemplate", template)]
    assert out.index(f"deleted pod default/{pod['metadata']['name']}") < out.index(
        f"deleted ResourceClaimTemplate default/{template}"
    )


NEW_NODE = {"events": [(2, SCALE_UP)], "nodes": [(4, node(gpus=0))]}


@pytest.mark.parametrize(
    ("scenario", "waiting", "cause", "evidence"),
    [
        pytest.param(
            dra_scenario(**NEW_NODE),
            "driver running",
            "the DRA driver's kubelet plugin is not running on the node",
            f"no pod labelled nvidia-dra-driver-gpu-component=kubelet-plugin on {NODE}",
            id="no-kubelet-plugin-pod",
        ),
        pytest.param(
            dra_scenario(**NEW_NODE, pods=[dra_plugin_pod(running=False)]),
            "driver running",
            "the DRA driver's kubelet plugin is not running on the node",
            "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin-ip-10-0-1-5 on "
            f"{NODE}: Pending, not ready",
            id="kubelet-plugin-not-ready",
        ),
        pytest.param(
            dra_scenario(**NEW_NODE, pods=[dra_plugin_pod()]),
            "devices published",
            "no ResourceSlice of gpu.nvidia.com on the node: the kubelet plugin publishes nothing",
            f"kubectl get resourceslices --field-selector spec.nodeName={NODE},"
            "spec.driver=gpu.nvidia.com: none",
            id="no-resource-slice",
        ),
        pytest.param(
            dra_scenario(
                **{**NEW_NODE, "events": [(2, SCALE_UP), (3, UNALLOCATABLE)]},
                pods=[dra_plugin_pod()],
                resource_slices=[(0, resource_slice())],
            ),
            "claim allocated",
            "the claim is unallocated: the scheduler found no device for it",
            f"event FailedScheduling: {UNALLOCATABLE[1]}",
            id="claim-unallocated",
        ),
        pytest.param(
            # The pool's node from before the pod: no scale-up, and its driver publishes
            # nothing.
            dra_scenario(standing_nodes=[node(gpus=0)], pods=[dra_plugin_pod()]),
            "devices published",
            "no ResourceSlice of gpu.nvidia.com on the node: the kubelet plugin publishes nothing",
            f"kubectl get resourceslices --field-selector spec.nodeName={NODE},"
            "spec.driver=gpu.nvidia.com: none",
            id="standing-node-no-resource-slice",
        ),
    ],
)
def test_each_dra_stall_names_its_stage_evidence_and_fix(
    tmp_path, capsys, dra_config, scenario, waiting, cause, evidence
):
    code, fake = run(tmp_path, scenario, *dra_config)
    out = capsys.readouterr().out
    assert code == 1
    assert f"verify: FAILED while waiting for '{waiting}': {cause}\n" in out
    assert f"  evidence: {evidence}\n" in out
    assert "  fix: " in out
    assert fake.deleted == [fake.created[0]["metadata"]["name"]]
    assert [k for k, _ in fake.deleted_objects] == ["ResourceClaimTemplate"]


def test_an_unallocated_claim_is_named(tmp_path, capsys, dra_config):
    scenario = dra_scenario(standing_nodes=[node(gpus=0)], pods=[dra_plugin_pod()])
    scenario.resource_slices = [(0, resource_slice())]
    code, fake = run(tmp_path, scenario, *dra_config)
    out = capsys.readouterr().out
    assert code == 1
    pod = fake.created[0]["metadata"]["name"]
    assert f"  evidence: ResourceClaim default/{pod}-gpu-x7k2p: no status.allocation\n" in out
    assert "kubectl get deviceclass gpu.nvidia.com" in out


def ultraserver_scenario(**kw):
    defaults = {
        "daemon_sets": [dra_kubelet_plugin(desired=2, ready=2)],
        "standing_nodes": [node(name=A, gpus=0), node(name=B, gpus=0)],
        "pods": [dra_plugin_pod(A), dra_plugin_pod(B)],
        "resource_slices": [
            (0, resource_slice(n, driver, devices=4 if driver == "gpu.nvidia.com" else 2048))
            for n in (A, B)
            for driver in ("gpu.nvidia.com", "compute-domain.nvidia.com")
        ],
        "scheduled_at": 2,
        "pod_nodes": [A, B],
        "device_classes": DEVICE_CLASSES,
        "log": "GPU 0: NVIDIA GB200\n    Fabric\n        State : Completed\n"
        "channel0\nimex-channel: channel0\n",
    }
    return Scenario(**{**defaults, **kw})


def test_verify_proves_one_imex_domain_over_two_ultraserver_nodes(
    tmp_path, capsys, ultraserver_record
):
    scenario = ultraserver_scenario(
        domain_status=[(3, domain_status((A, "c1", "Ready"), (B, "c1", "Ready")))],
        succeeded_at=5,
    )
    code, fake = run(tmp_path, scenario, *assembly(tmp_path, ultraserver_record))
    out = capsys.readouterr().out
    assert code == 0, out
    run_name = fake.created_objects[0][1]
    assert [(k, n) for k, n, _ in fake.created_objects] == [
        ("ComputeDomain", run_name),
        ("ResourceClaimTemplate", f"{run_name}-gpus"),
    ]
    assert [p["metadata"]["name"] for p in fake.created] == [f"{run_name}-0", f"{run_name}-1"]
    assert f"scheduled: on {A}, {B}" in out
    # Each pod's claim has its node's four GPUs.
    gpus = lambda n: ", ".join(f"gpu.nvidia.com/{n}/gpu-{i}" for i in range(4))  # noqa: E731
    assert f"claim allocated: {gpus(A)}, {gpus(B)}\n" in out
    assert f"imex ready: ComputeDomain {run_name} Ready on {A}, {B}" in out
    assert f"IMEX domain over {A}, {B} (clique c1); each pod saw IMEX channel0" in out
    assert out.endswith(
        f"verify: OK\ndeleted pod default/{run_name}-1\ndeleted pod default/{run_name}-0\n"
        f"deleted ResourceClaimTemplate default/{run_name}-gpus\n"
        f"deleted ComputeDomain default/{run_name}\n"
    )


def test_an_imex_daemon_that_is_not_ready_is_named(tmp_path, capsys, ultraserver_record):
    uid = "5f0c2a1e-cd01-4e55-9a3b-2b7d1c9e0f11"
    scenario = ultraserver_scenario(
        domain_status=[(3, domain_status((A, "c1", "Ready"), (B, "c1", "NotReady"), ready=False))],
    )
    scenario.pods += [imex_daemon_pod(A, uid), imex_daemon_pod(B, uid, running=False)]
    code, fake = run(tmp_path, scenario, *assembly(tmp_path, ultraserver_record))
    out = capsys.readouterr().out
    assert code == 1
    run_name = fake.created_objects[0][1]
    assert (
        "verify: FAILED while waiting for 'imex ready': the IMEX daemons are not ready "
        "(ComputeDomain not Ready)\n"
    ) in out
    assert (
        f"  evidence: ComputeDomain default/{run_name}: NotReady; nodes: {A} Ready (clique c1), "
        f"{B} NotReady (clique c1)\n"
    ) in out
    assert (
        f"  evidence: IMEX daemon nvidia-dra-driver-gpu/computedomain-daemon-5f0c2a1e-ip-10-0-3-8 "
        f"on {B}: Pending, not ready\n"
    ) in out
    assert (
        "  fix: the IMEX daemon's log (kubectl logs -n nvidia-dra-driver-gpu "
        "computedomain-daemon-5f0c2a1e-ip-10-0-3-8); both nodes must be in one NVLink partition "
        "(the same ClusterUUID and CliqueId) with Fabric state Completed (nvidia-smi -q on the "
        "node)\n"
    ) in out
    assert [k for k, _ in fake.deleted_objects] == ["ResourceClaimTemplate", "ComputeDomain"]


def test_pods_in_two_cliques_are_not_one_imex_domain(tmp_path, capsys, ultraserver_record):
    scenario = ultraserver_scenario(
        domain_status=[(3, domain_status((A, "c1", "Ready"), (B, "c2", "Ready")))],
        succeeded_at=5,
    )
    code, _ = run(tmp_path, scenario, *assembly(tmp_path, ultraserver_record))
    out = capsys.readouterr().out
    assert code == 1
    assert (
        "verify: FAILED while waiting for 'imex ready': the pods ran, but not in one IMEX "
        "domain over both nodes\n  evidence: the nodes are in different cliques: c1, c2\n"
    ) in out


def test_a_cluster_without_compute_domains_is_named_and_nothing_is_left(
    tmp_path, capsys, ultraserver_record
):
    scenario = ultraserver_scenario(compute_domain_crd=False)
    code, fake = run(tmp_path, scenario, *assembly(tmp_path, ultraserver_record))
    out = capsys.readouterr().out
    assert code == 1
    assert (
        "verify: FAILED while waiting for 'submitted': the API server does not serve "
        "resource.nvidia.com/v1beta1 ComputeDomain\n"
    ) in out
    assert "the DRA driver's CRD, installed with its ComputeDomains feature" in out
    # Nothing was created after the refusal, so nothing is left to delete.
    assert fake.created == [] and fake.created_objects == [] and fake.deleted_objects == []


def test_doctor_on_a_healthy_dra_pool(tmp_path, capsys, dra_config):
    scenario = dra_scenario(
        nodes=[(0, node(gpus=0))], pods=[dra_plugin_pod()], resource_slices=[(0, resource_slice())]
    )
    code, _ = run(tmp_path, scenario, *dra_config, command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"[  ok] node {NODE}: Ready, 1 GPU(s) in ResourceSlices of gpu.nvidia.com"
    assert (
        "[  ok] DaemonSet nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin: 1/1 ready"
    ) in out
    assert "[  ok] DeviceClass gpu.nvidia.com: installed" in out
    # No device plugin is expected where every pool is DRA.
    assert not [line for line in out if "device plugin" in line]
    assert code == 0


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        pytest.param(
            dra_scenario(nodes=[(0, node(gpus=0))], pods=[dra_plugin_pod()]),
            [
                f"[fail] node {NODE}: Ready, but kubectl get resourceslices --field-selector "
                f"spec.nodeName={NODE},spec.driver=gpu.nvidia.com: none",
                "       fix: the plugin runs but publishes nothing: kubectl -n "
                "nvidia-dra-driver-gpu logs nvidia-dra-driver-gpu-kubelet-plugin-ip-10-0-1-5 -c "
                "gpus (a driver root it cannot read, or no GPU it can see)",
            ],
            id="no-resource-slice",
        ),
        pytest.param(
            dra_scenario(nodes=[(0, node(gpus=0))], daemon_sets=[]),
            [
                f"[fail] node {NODE}: Ready, but no pod labelled "
                f"nvidia-dra-driver-gpu-component=kubelet-plugin on {NODE}",
                "[fail] DRA driver: no kubelet-plugin DaemonSet labelled "
                "app.kubernetes.io/name=nvidia-dra-driver-gpu in any namespace",
                "       fix: deploy the stack with pool.gpu_software: dra-driver",
            ],
            id="no-driver",
        ),
        pytest.param(
            dra_scenario(
                nodes=[(0, node(gpus=0))],
                daemon_sets=[dra_kubelet_plugin(desired=1, ready=0)],
                pods=[dra_plugin_pod(running=False)],
            ),
            [
                "[fail] DaemonSet nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin: "
                "0/1 ready",
                "       fix: kubectl -n nvidia-dra-driver-gpu describe ds "
                "nvidia-dra-driver-gpu-kubelet-plugin",
            ],
            id="kubelet-plugin-not-ready",
        ),
        pytest.param(
            dra_scenario(
                nodes=[(0, node(gpus=0))],
                pods=[dra_plugin_pod(), device_plugin_pod()],
                resource_slices=[(0, resource_slice())],
            ),
            [
                f"[fail] node {NODE}: a device plugin runs on this DRA node beside the DRA "
                "driver: kube-system/nvidia-device-plugin-gpu-7fz2d",
            ],
            id="device-plugin-beside-the-driver",
        ),
        pytest.param(
            dra_scenario(
                nodes=[(0, node(gpus=0))],
                pods=[dra_plugin_pod(), device_plugin_pod(operator=True)],
                resource_slices=[(0, resource_slice())],
            ),
            [
                f"[fail] node {NODE}: a device plugin runs on this DRA node beside the DRA "
                "driver: gpu-operator/nvidia-device-plugin-daemonset-x2k9q",
                "       fix: one GPU advertiser per node: the device plugin's DaemonSet must not "
                "select the pool (redeploy the stack: gpu_software: dra-driver installs none "
                "there); the GPU Operator's: label the node nvidia.com/gpu.deploy.operands=false",
            ],
            id="gpu-operator-device-plugin-beside-the-driver",
        ),
        pytest.param(
            dra_scenario(
                nodes=[(0, node(gpus=0))],
                pods=[dra_plugin_pod()],
                resource_slices=[(0, resource_slice())],
                device_classes=[],
            ),
            [
                "[fail] DeviceClass gpu.nvidia.com: missing: no claim for it can be allocated",
                "       fix: the driver's chart installs it with resources.gpus.enabled: "
                "redeploy the stack",
            ],
            id="no-gpu-device-class",
        ),
    ],
)
def test_doctor_fails_each_broken_dra_check(tmp_path, capsys, dra_config, scenario, expected):
    code, _ = run(tmp_path, scenario, *dra_config, command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    for line in expected:
        assert line in out, "\n".join(out)


def test_doctor_checks_an_ultraserver_nodes_imex_channels(tmp_path, capsys, ultraserver_record):
    scenario = ultraserver_scenario(
        resource_slices=[(0, resource_slice(n, devices=4)) for n in (A, B)]
    )
    code, _ = run(tmp_path, scenario, *assembly(tmp_path, ultraserver_record), command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert (
        f"[fail] node {A}: Ready, but kubectl get resourceslices --field-selector "
        f"spec.nodeName={A},spec.driver=compute-domain.nvidia.com: none"
    ) in out
    assert "[  ok] DeviceClass compute-domain-default-channel.nvidia.com: installed" in out


def test_doctor_wants_the_channel_device_class_on_an_ultraserver_cluster(
    tmp_path, capsys, ultraserver_record
):
    scenario = ultraserver_scenario(device_classes=["gpu.nvidia.com"])
    code, _ = run(tmp_path, scenario, *assembly(tmp_path, ultraserver_record), command="doctor")
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert f"[  ok] node {A}: Ready, 4 GPU(s) in ResourceSlices of gpu.nvidia.com" in out
    assert (
        "[fail] DeviceClass compute-domain-default-channel.nvidia.com: missing: no claim for it "
        "can be allocated"
    ) in out
    assert (
        "       fix: the driver's chart installs it with resources.computeDomains.enabled: "
        "redeploy the stack"
    ) in out


def test_the_documented_doctor_output_is_the_commands(tmp_path, capsys, dra_config):
    """docs/verify-and-doctor.md's DRA doctor sample is this scenario's output, line for line."""
    from tests.support.paths import ROOT

    page = (ROOT / "docs" / "verify-and-doctor.md").read_text(encoding="utf-8")
    section = page.split("## DRA pools and UltraServer pools", 1)[1].split("\n## ", 1)[0]
    documented = section.split("$ gpu-pool doctor\n", 1)[1].split("```", 1)[0]
    scenario = dra_scenario(
        nodes=[(0, node(gpus=0))],
        pods=[dra_plugin_pod(), device_plugin_pod(operator=True)],
        resource_slices=[(0, resource_slice())],
    )
    code, _ = run(tmp_path, scenario, *dra_config, command="doctor")
    assert code == 1
    assert capsys.readouterr().out == documented


def test_verify_proves_imex_on_an_ultraserver_pool_of_eks_shape(tmp_path, capsys):
    """EKS's shape (the default: GPUs through the device plugin, the DRA driver for
    ComputeDomains only): the same ComputeDomain and two pods, no GPU claim template, each pod
    asking for its node's four nvidia.com/gpu; verify still waits for the domain's IMEX daemons
    and checks both pods saw their channel."""
    from gpu_pool.cli.sources import settings_pools
    from gpu_pool.settings import load_settings

    pool = {
        "instance_types": ["p6e-gb200.36xlarge"],
        "zones": ["us-east-1a"],
        "capacity_reservation": {"type": "capacity-block", "id": "cr-0123456789abcdef0"},
    }
    (record,) = settings_pools(load_settings({"pools": {"gpu": pool}}, None)).records
    scenario = Scenario(
        standing_nodes=[node(name=A, gpus=4), node(name=B, gpus=4)],
        scheduled_at=2,
        pod_nodes=[A, B],
        domain_status=[(3, domain_status((A, "c1", "Ready"), (B, "c1", "Ready")))],
        succeeded_at=5,
        log="GPU 0: NVIDIA GB200\n    Fabric\n        State : Completed\n"
        "channel0\nimex-channel: channel0\n",
    )
    code, fake = run(tmp_path, scenario, *assembly(tmp_path, record))
    out = capsys.readouterr().out
    assert code == 0, out
    run_name = fake.created_objects[0][1]
    assert [(k, n) for k, n, _ in fake.created_objects] == [("ComputeDomain", run_name)]
    for pod in fake.created:
        (container,) = pod["spec"]["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert f"imex ready: ComputeDomain {run_name} Ready on {A}, {B}" in out
    assert f"IMEX domain over {A}, {B} (clique c1); each pod saw IMEX channel0" in out
    assert "verify: OK\n" in out
