"""`gpu-pool replacements` on a cluster whose NVIDIA DRA driver release moves from NVIDIA's
chart nvidia-dra-driver-gpu 25.12.0 to kubernetes-sigs' dra-driver-nvidia-gpu 0.4.1 (issue #37
item 1): the same release is upgraded, and the user applies the new CRDs first."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from gpu_pool.cli.main import main
from gpu_pool.plan.dra import DRA_CRDS

FIXTURES = Path(__file__).parent.parent / "fixtures"
HELM = "Custom::AWSCDK-EKS-HelmChart"
BASE = (
    "https://raw.githubusercontent.com/kubernetes-sigs/dra-driver-nvidia-gpu/refs/tags/v0.4.1/"
    "deployments/helm/dra-driver-nvidia-gpu/crds/"
)
UPGRADE = [
    "gpu-pool replacements: the NVIDIA DRA driver release nvidia-dra-driver-gpu (namespace "
    "nvidia-dra-driver-gpu) is upgraded in place, nvidia-dra-driver-gpu 25.12.0 -> "
    "dra-driver-nvidia-gpu 0.4.1. Helm does not upgrade CRDs: apply the new ones before you "
    "deploy:",
    f"  kubectl apply -f {BASE}resource.nvidia.com_computedomains.yaml",
    f"  kubectl apply -f {BASE}resource.nvidia.com_computedomaincliques.yaml",
    "  nvidia-dra-driver-gpu -> dra-driver-nvidia-gpu is the driver's move to kubernetes-sigs: "
    "there is no way back to the old chart once upgraded (kubernetes-sigs/dra-driver-nvidia-gpu "
    "docs/upgrade.md).",
]


def on_25_12(template):
    """The template as gpu-pool wrote it while it pinned NVIDIA's chart 25.12.0 (versions.py
    before the move): the same release and namespace, the old chart from NGC."""
    old = copy.deepcopy(template)
    (props,) = [
        r["Properties"]
        for r in old["Resources"].values()
        if r["Type"] == HELM and r["Properties"]["Release"] == "nvidia-dra-driver-gpu"
    ]
    props.update(
        Chart="nvidia-dra-driver-gpu",
        Repository="https://helm.ngc.nvidia.com/nvidia",
        Version="25.12.0",
    )
    return old


def write(tmp_path, name, template):
    path = tmp_path / name
    path.write_text(json.dumps(template))
    return str(path)


def test_the_move_names_the_release_and_the_crds_to_apply_first(dra_template, tmp_path, capsys):
    new = dra_template.to_json()
    old = write(tmp_path, "old.json", on_25_12(new))
    args = ["replacements", "--deployed", old, "--new", write(tmp_path, "new.json", new)]
    assert main([*args, "--yes"]) == 0
    assert capsys.readouterr().out.splitlines() == UPGRADE


def test_the_move_waits_for_confirmation(dra_template, tmp_path, capsys, monkeypatch):
    new = dra_template.to_json()
    old = write(tmp_path, "old.json", on_25_12(new))
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    args = ["replacements", "--deployed", old, "--new", write(tmp_path, "new.json", new)]
    assert main(args) == 1


def test_no_upgrade_is_named_for_a_first_install_or_the_same_version(
    default_template, dra_template, tmp_path, capsys
):
    without = write(tmp_path, "without.json", default_template.to_json())
    same = write(tmp_path, "same.json", dra_template.to_json())
    for deployed in (without, same):
        assert main(["replacements", "--deployed", deployed, "--new", same, "--yes"]) == 0
        assert "NVIDIA DRA driver" not in capsys.readouterr().out


def test_the_crds_applied_are_the_charts_own():
    """Every CRD of the pinned chart (its crds/ folder), none else."""
    crds = FIXTURES / "charts" / "dra-driver-nvidia-gpu-0.4.1" / "crds"
    assert sorted(DRA_CRDS) == sorted(p.name for p in crds.iterdir())


def test_a_version_bump_within_the_chart_is_named_with_its_crds(dra_template, tmp_path, capsys):
    """#48 item 10: the next pin of dra-driver-nvidia-gpu is an upgrade of the same chart, whose
    CRDs Helm leaves as they were: replacements names it (and no move between charts)."""
    new = dra_template.to_json()
    old = copy.deepcopy(new)
    (props,) = [
        r["Properties"]
        for r in old["Resources"].values()
        if r["Type"] == HELM and r["Properties"]["Release"] == "nvidia-dra-driver-gpu"
    ]
    props["Version"] = "0.4.0"
    args = ["replacements", "--deployed", write(tmp_path, "old.json", old)]
    assert main([*args, "--new", write(tmp_path, "new.json", new), "--yes"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "gpu-pool replacements: the NVIDIA DRA driver release nvidia-dra-driver-gpu (namespace "
        "nvidia-dra-driver-gpu) is upgraded in place, dra-driver-nvidia-gpu 0.4.0 -> "
        "dra-driver-nvidia-gpu 0.4.1. Helm does not upgrade CRDs: apply the new ones before you "
        "deploy:",
        *UPGRADE[1:3],
    ]
