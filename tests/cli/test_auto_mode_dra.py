"""`gpu-pool verify` and `doctor` on an Auto Mode DRA pool (Kubernetes 1.36): its nodes run the
NVIDIA DRA driver in their node runtime (EKS UG "Manage hardware devices on Amazon EKS"), so
there is no kubelet-plugin pod or DaemonSet to find, only the node's ResourceSlices."""

from gpu_pool.cli.sources import settings_pools
from gpu_pool.settings import load_settings
from tests.cli.test_dra_verify_doctor import DEVICE_CLASSES, assembly
from tests.support.command import run
from tests.support.fake_kube import Scenario, node, resource_slice

NODE = "ip-10-0-1-5.ec2.internal"


def auto_mode_dra_record():
    settings = load_settings(
        {
            "cluster": {"kubernetes_version": "1.36"},
            "pools": {
                "gpu": {
                    "provisioner": "auto-mode",
                    "gpu_software": "dra-driver",
                    "instance_types": ["g6e.xlarge"],
                }
            },
        },
        None,
    )
    (record,) = settings_pools(settings).records
    return record


def scenario(**kw):
    return Scenario(
        **{"daemon_sets": [], "device_classes": DEVICE_CLASSES, "standing_nodes": [node(gpus=0)]}
        | kw
    )


def test_doctor_reads_the_nodes_slices_and_wants_no_kubelet_plugin(tmp_path, capsys):
    state = scenario(resource_slices=[(0, resource_slice())])
    run(tmp_path, state, *assembly(tmp_path, auto_mode_dra_record()), command="doctor")
    out = capsys.readouterr().out.splitlines()
    # (The scenario holds no NodePool: that is the only other failure.)
    assert f"[  ok] node {NODE}: Ready, 1 GPU(s) in ResourceSlices of gpu.nvidia.com" in out
    assert not [line for line in out if "kubelet-plugin" in line or "kubelet plugin" in line]


def test_doctor_names_a_node_without_slices_and_auto_modes_fix(tmp_path, capsys):
    code, _ = run(
        tmp_path, scenario(), *assembly(tmp_path, auto_mode_dra_record()), command="doctor"
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert (
        f"[fail] node {NODE}: Ready, but kubectl get resourceslices --field-selector "
        f"spec.nodeName={NODE},spec.driver=gpu.nvidia.com: none"
    ) in out
    assert (
        "       fix: Auto Mode runs the NVIDIA DRA driver in its nodes' runtime from Kubernetes "
        "1.36: check the cluster's version (aws eks describe-cluster) and the node's events "
        "(kubectl describe node)"
    ) in out


def test_verify_follows_the_drivers_stages_without_a_kubelet_plugin_pod(tmp_path, capsys):
    state = scenario(
        standing_nodes=[],
        nodes=[(2, node(gpus=0))],
        resource_slices=[(3, resource_slice())],
        scheduled_at=6,
        succeeded_at=8,
    )
    code, _ = run(tmp_path, state, *assembly(tmp_path, auto_mode_dra_record()))
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"driver running: in Auto Mode's node runtime on {NODE}" in out
    assert f"devices published: 1 GPU(s) of gpu.nvidia.com on {NODE}" in out
