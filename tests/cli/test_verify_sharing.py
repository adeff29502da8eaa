"""`gpu-pool verify` and `smoke-test-manifest` on a sharing pool (#23 item 6): the smoke pod asks
for one share or one MIG instance, and verify waits for the node to advertise it."""

import pytest
import yaml

from gpu_pool.cli.main import main
from tests.support.command import run
from tests.support.fake_kube import SCALE_UP, Scenario, node
from tests.support.paths import ROOT

RENAMED = "{mode: time-slicing, replicas: 8, rename: true}"
MIXED = (
    "{mode: mig, strategy: mixed, layout: {1g.10gb+me: 1, 3g.40gb: 1}}\n"
    "  instance_types: [p5.48xlarge]\n  gpu_software: gpu-operator"
)


def config(tmp_path, sharing):
    path = tmp_path / "sharing.yaml"
    path.write_text(f"pool:\n  sharing: {sharing}\n")
    return str(path)


def manifest(tmp_path, capsys, sharing, *extra):
    argv = ["smoke-test-manifest", "--cdk-json", str(ROOT / "cdk.json")]
    code = main([*argv, "--config", config(tmp_path, sharing), *extra])
    return code, capsys.readouterr()


@pytest.mark.parametrize(
    ("sharing", "extra", "limits"),
    [
        ("{mode: time-slicing, replicas: 4}", [], {"nvidia.com/gpu": "1"}),
        (RENAMED, [], {"nvidia.com/gpu.shared": "1"}),
        (MIXED, [], {"nvidia.com/mig-1g.10gb.me": "1"}),
        (MIXED, ["--resource", "nvidia.com/mig-3g.40gb"], {"nvidia.com/mig-3g.40gb": "1"}),
    ],
    ids=["time-slicing", "renamed", "mig-mixed-first-profile", "mig-mixed-chosen-profile"],
)
def test_the_smoke_pod_asks_for_one_share(tmp_path, capsys, sharing, extra, limits):
    code, out = manifest(tmp_path, capsys, sharing, *extra)
    assert code == 0, out.err
    pod = yaml.safe_load(out.out)
    assert pod["spec"]["containers"][0]["resources"]["limits"] == limits


def test_a_resource_the_pool_does_not_advertise_is_a_usage_error(tmp_path, capsys):
    code, out = manifest(tmp_path, capsys, RENAMED, "--resource", "nvidia.com/gpu")
    assert code == 2
    assert out.err == (
        "gpu-pool: --resource: pool 'gpu' does not advertise 'nvidia.com/gpu' "
        "(it advertises: nvidia.com/gpu.shared)\n"
    )


def test_verify_waits_for_the_shares_not_whole_gpus(tmp_path, capsys):
    shared = node(gpus=0)
    shared["status"]["allocatable"]["nvidia.com/gpu.shared"] = "8"
    scenario = Scenario(events=[(2, SCALE_UP)], nodes=[(4, shared)], scheduled_at=6, succeeded_at=8)
    code, fake = run(tmp_path, scenario, "--config", config(tmp_path, RENAMED))
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"submitted pod default/{fake.deleted[0]} (nvidia.com/gpu.shared: 1)" in out
    assert "gpu allocatable: nvidia.com/gpu.shared: 8" in out
    (created,) = fake.created
    assert created["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu.shared": "1"}


def test_verify_submits_the_mig_instance_asked_for(tmp_path, capsys):
    mig = node(gpus=0)
    mig["status"]["allocatable"].update(
        {"nvidia.com/mig-1g.10gb.me": "8", "nvidia.com/mig-3g.40gb": "8"}
    )
    scenario = Scenario(events=[(2, SCALE_UP)], nodes=[(4, mig)], scheduled_at=6, succeeded_at=8)
    chosen = ["--resource", "nvidia.com/mig-3g.40gb"]
    code, fake = run(tmp_path, scenario, "--config", config(tmp_path, MIXED), *chosen)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"submitted pod default/{fake.deleted[0]} (nvidia.com/mig-3g.40gb: 1)" in out
    (created,) = fake.created
    assert created["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/mig-3g.40gb": "1"
    }


def test_settings_a_synth_refuses_stop_the_command_with_the_synths_message(tmp_path, capsys):
    code, out = manifest(tmp_path, capsys, "{mode: time-slicing}")
    assert code == 2
    assert out.err == (
        "gpu-pool: the settings describe pools a synth refuses (fix them, or read what is "
        "deployed with --stack NAME or --cdk-out DIR):\n"
        "  pool.sharing.replicas: required with mode time-slicing: how many pods share each GPU, "
        "2 to 48\n"
    )
