"""`gpu-pool doctor` with GPU metrics on (#23 item 5): per GPU node, whether a DCGM exporter
runs there."""

from __future__ import annotations

import pytest

from tests.cli.test_doctor import GOOD_TAGS, _aws
from tests.support.command import run
from tests.support.fake_kube import Scenario, node

NODE = "ip-10-0-1-5.ec2.internal"


def exporter(name, namespace, labels, on=NODE, ready=True):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": on, "containers": [{"name": "exporter", "image": "x"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


CHART_POD = exporter(
    "dcgm-exporter-7xk2p", "kube-system", {"app.kubernetes.io/name": "dcgm-exporter"}
)
OPERATOR_POD = exporter(
    "nvidia-dcgm-exporter-abcde", "gpu-operator", {"app": "nvidia-dcgm-exporter"}
)
CLOUDWATCH_POD = exporter("dcgm-exporter-q9w8e", "amazon-cloudwatch", {"k8s-app": "dcgm-exporter"})

CASES = {
    "chart-exporter-on-the-node": (
        "dcgm-exporter",
        [CHART_POD],
        [f"[  ok] metrics {NODE}: exported by kube-system/dcgm-exporter-7xk2p"],
    ),
    "operator-exporter-on-the-node": (
        "dcgm-exporter",
        [OPERATOR_POD],
        [f"[  ok] metrics {NODE}: exported by gpu-operator/nvidia-dcgm-exporter-abcde"],
    ),
    "exporter-on-another-node": (
        "dcgm-exporter",
        [
            exporter(
                "dcgm-exporter-1",
                "kube-system",
                {"app.kubernetes.io/name": "dcgm-exporter"},
                on="other",
            )
        ],
        [
            f"[warn] metrics {NODE}: no running DCGM exporter pod on it (metrics.gpu: "
            "dcgm-exporter)",
            "       fix: kubectl -n kube-system describe ds dcgm-exporter: its node affinity and "
            "tolerations must admit the node (redeploy the stack after changing a pool's taints)",
        ],
    ),
    "exporter-not-ready": (
        "dcgm-exporter",
        [
            exporter(
                "dcgm-exporter-2",
                "kube-system",
                {"app.kubernetes.io/name": "dcgm-exporter"},
                ready=False,
            )
        ],
        [f"[warn] metrics {NODE}: no running DCGM exporter pod on it (metrics.gpu: dcgm-exporter)"],
    ),
    # The API returns only the chart's pods (the selector); a pod merely named like one is not.
    "pod-named-like-an-exporter": (
        "dcgm-exporter",
        [exporter("dcgm-exporter-debug", "kube-system", {"run": "debug"})],
        [f"[warn] metrics {NODE}: no running DCGM exporter pod on it (metrics.gpu: dcgm-exporter)"],
    ),
    "cloudwatch-exporter-on-the-node": (
        "cloudwatch",
        [CLOUDWATCH_POD],
        [f"[  ok] metrics {NODE}: exported by amazon-cloudwatch/dcgm-exporter-q9w8e"],
    ),
    "cloudwatch-exporter-missing": (
        "cloudwatch",
        [],
        [
            f"[warn] metrics {NODE}: no running DCGM exporter pod on it (metrics.gpu: cloudwatch)",
            "       fix: kubectl -n amazon-cloudwatch get pods -o wide: the add-on's DCGM "
            "exporter may not tolerate the pool's taints (aws/amazon-cloudwatch-agent-operator#290)",
        ],
    ),
}


@pytest.mark.parametrize(("metrics", "pods", "lines"), CASES.values(), ids=CASES.keys())
def test_doctor_reports_per_gpu_node_whether_metrics_are_exported(
    tmp_path, capsys, metrics, pods, lines
):
    assert metrics_output(tmp_path, capsys, metrics, pods, node())[: len(lines)] == lines


def test_a_node_of_a_type_the_add_ons_exporter_skips_is_told_so(tmp_path, capsys):
    """No taint to blame: the add-on's exporter never selects a g7e node (GP-METRICS-02)."""
    lines = [
        f"[warn] metrics {NODE}: no running DCGM exporter pod on it (metrics.gpu: cloudwatch)",
        "       fix: its instance type g7e.2xlarge is not among those the CloudWatch add-on runs "
        "its DCGM exporter on (GP-METRICS-02): set metrics.gpu: dcgm-exporter for its GPU "
        "metrics",
    ]
    gpu_node = node(instance_type="g7e.2xlarge")
    assert metrics_output(tmp_path, capsys, "cloudwatch", [], gpu_node)[: len(lines)] == lines


def metrics_output(tmp_path, capsys, metrics, pods, gpu_node):
    """doctor's output from its first line about the node's metrics; it still exits 0."""
    config = tmp_path / "metrics.yaml"
    config.write_text(f"metrics:\n  gpu: {metrics}\n")
    scenario = Scenario(nodes=[(0, gpu_node)], pods=pods)
    code, _ = run(
        tmp_path, scenario, "--config", str(config), aws=_aws(GOOD_TAGS), command="doctor"
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0  # metrics are opt-in: a missing exporter warns, GPU pods still run
    (position,) = [i for i, line in enumerate(out) if line[7:].startswith(f"metrics {NODE}:")]
    return out[position:]


def test_without_metrics_doctor_says_nothing_of_them(tmp_path, capsys):
    code, _ = run(tmp_path, Scenario(nodes=[(0, node())]), aws=_aws(GOOD_TAGS), command="doctor")
    assert "metrics" not in capsys.readouterr().out
    assert code == 0


def test_a_node_not_ready_is_skipped_and_the_next_one_judged(tmp_path, capsys):
    """Only Ready nodes need an exporter; one that is not does not end the list."""
    config = tmp_path / "metrics.yaml"
    config.write_text("metrics:\n  gpu: dcgm-exporter\n")
    waiting = node("ip-10-0-1-4.ec2.internal", ready=False)
    scenario = Scenario(standing_nodes=[waiting], nodes=[(0, node())], pods=[CHART_POD])
    run(tmp_path, scenario, "--config", str(config), aws=_aws(GOOD_TAGS), command="doctor")
    metrics = [line for line in capsys.readouterr().out.splitlines() if "] metrics " in line]
    assert metrics == [f"[  ok] metrics {NODE}: exported by kube-system/dcgm-exporter-7xk2p"]


def test_every_pools_gpu_nodes_are_judged(tmp_path, capsys):
    config = tmp_path / "metrics.yaml"
    config.write_text(
        "metrics:\n  gpu: dcgm-exporter\n"
        "pools:\n  a:\n    labels: {workload: a}\n  b:\n    labels: {workload: b}\n"
    )
    first = node("ip-10-0-1-4.ec2.internal", pool="a")
    scenario = Scenario(standing_nodes=[first], nodes=[(0, node(pool="b"))], pods=[CHART_POD])
    run(tmp_path, scenario, "--config", str(config), aws=_aws(GOOD_TAGS), command="doctor")
    out = capsys.readouterr().out.splitlines()
    # The metrics verdicts come after the nodes' own, which they do not replace.
    assert f"[  ok] node {NODE}: Ready, nvidia.com/gpu: 1" in out
    metrics = [line for line in out if "] metrics " in line]
    assert metrics == [
        "[warn] metrics ip-10-0-1-4.ec2.internal: no running DCGM exporter pod on it "
        "(metrics.gpu: dcgm-exporter)",
        f"[  ok] metrics {NODE}: exported by kube-system/dcgm-exporter-7xk2p",
    ]
