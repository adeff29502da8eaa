"""`gpu-pool doctor` on a sharing pool (#23 item 6): each node against the resources its pool's
sharing should advertise, and the ASG's resource tags against the shares, not the GPUs."""

from __future__ import annotations

import pytest

from tests.cli.test_doctor import GOOD_TAGS, GPU_TAG, _aws
from tests.support.command import run
from tests.support.fake_kube import Scenario, node

SHARED_TAG = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu.shared"
POOL_TAG = "k8s.io/cluster-autoscaler/node-template/label/gpu-pool.io/pool"
NODE = "ip-10-0-1-5.ec2.internal"


def sharing_run(tmp_path, sharing, scenario, tags):
    config = tmp_path / "sharing.yaml"
    config.write_text(f"pool:\n  sharing: {sharing}\n")
    return run(tmp_path, scenario, "--config", str(config), aws=_aws(tags), command="doctor")


def g5_node(**allocatable):
    shared = node(instance_type="g5.xlarge")
    shared["status"]["allocatable"] = {"cpu": "4", **allocatable}
    return shared


TIME_SLICING = "{mode: time-slicing, replicas: 4}"
RENAMED = "{mode: time-slicing, replicas: 8, rename: true}"
SHARED_TAGS = {**GOOD_TAGS, POOL_TAG: "gpu", GPU_TAG: "4"}
RENAMED_TAGS = {**GOOD_TAGS, POOL_TAG: "gpu", GPU_TAG: "0", SHARED_TAG: "8"}

CASES = {
    "shares-advertised": (
        TIME_SLICING,
        g5_node(**{"nvidia.com/gpu": "4"}),
        SHARED_TAGS,
        [f"[  ok] node {NODE}: Ready, nvidia.com/gpu: 4"],
        0,
    ),
    "config-not-read": (
        TIME_SLICING,
        g5_node(**{"nvidia.com/gpu": "1"}),
        SHARED_TAGS,
        [
            f"[fail] node {NODE}: Ready, advertises nvidia.com/gpu: 1; its pool's time-slicing "
            "should make it nvidia.com/gpu: 4",
            "       fix: check its label nvidia.com/device-plugin.config=gpu and restart the "
            "pool's device plugin (kubectl -n kube-system rollout restart daemonset "
            "nvidia-device-plugin-gpu; the GPU Operator's for a MIG pool)",
        ],
        1,
    ),
    # No nvidia.com/gpu by design: not the "0 nvidia.com/gpu" failure of a whole-GPU pool.
    "renamed-shares-advertised": (
        RENAMED,
        g5_node(**{"nvidia.com/gpu.shared": "8"}),
        RENAMED_TAGS,
        [f"[  ok] node {NODE}: Ready, nvidia.com/gpu: 0, nvidia.com/gpu.shared: 8"],
        0,
    ),
    "renamed-config-not-read": (
        RENAMED,
        g5_node(**{"nvidia.com/gpu": "1"}),
        RENAMED_TAGS,
        [
            f"[fail] node {NODE}: Ready, advertises nvidia.com/gpu: 1, nvidia.com/gpu.shared: 0; "
            "its pool's time-slicing should make it nvidia.com/gpu: 0, nvidia.com/gpu.shared: 8",
            "       fix: check its label nvidia.com/device-plugin.config=gpu and restart the "
            "pool's device plugin (kubectl -n kube-system rollout restart daemonset "
            "nvidia-device-plugin-gpu; the GPU Operator's for a MIG pool)",
        ],
        1,
    ),
    # Without its instance type the shares cannot be known: judged as a whole-GPU node.
    "node-of-unknown-type": (
        TIME_SLICING,
        node(),
        SHARED_TAGS,
        [f"[  ok] node {NODE}: Ready, nvidia.com/gpu: 1"],
        0,
    ),
    "asg-tags-count-the-shares": (
        TIME_SLICING,
        None,
        SHARED_TAGS,
        ["[  ok] ASG eks-GpuPoolG5Xlarge-4ac9: GpuPoolG5Xlarge-abc: nvidia.com/gpu=4"],
        0,
    ),
    "asg-tag-counts-the-gpus": (
        TIME_SLICING,
        None,
        {**SHARED_TAGS, GPU_TAG: "1"},
        [
            "[fail] ASG eks-GpuPoolG5Xlarge-4ac9: tag k8s.io/cluster-autoscaler/node-template/"
            "resources/nvidia.com/gpu='1', but g5.xlarge advertises 4 with its pool's "
            "time-slicing"
        ],
        1,
    ),
    "asg-renamed-tags": (
        RENAMED,
        None,
        RENAMED_TAGS,
        [
            "[  ok] ASG eks-GpuPoolG5Xlarge-4ac9: GpuPoolG5Xlarge-abc: nvidia.com/gpu=0, "
            "nvidia.com/gpu.shared=8"
        ],
        0,
    ),
    # Tags written before the pool renamed its shares: both resources are named.
    "asg-tags-from-before-the-rename": (
        RENAMED,
        None,
        SHARED_TAGS,
        [
            "[fail] ASG eks-GpuPoolG5Xlarge-4ac9: tag k8s.io/cluster-autoscaler/node-template/"
            "resources/nvidia.com/gpu='4', but g5.xlarge advertises 0 with its pool's "
            "time-slicing; no tag k8s.io/cluster-autoscaler/node-template/resources/"
            "nvidia.com/gpu.shared, but g5.xlarge advertises 8 with its pool's time-slicing"
        ],
        1,
    ),
}


@pytest.mark.parametrize(
    ("sharing", "shared_node", "tags", "lines", "code"), CASES.values(), ids=CASES.keys()
)
def test_doctor_judges_a_sharing_pool_by_its_shares(
    tmp_path, capsys, sharing, shared_node, tags, lines, code
):
    scenario = Scenario(nodes=[(0, shared_node)]) if shared_node else Scenario()
    exit_code, _ = sharing_run(tmp_path, sharing, scenario, tags)
    out = capsys.readouterr().out.splitlines()
    position = out.index(lines[0])
    assert out[position : position + len(lines)] == lines
    assert exit_code == code
