"""`gpu-pool verify` on an EFA pool whose EFA interfaces the EFA DRA driver advertises
(`efa_software: dra-driver`): a Ready node without the driver's `dra.net` ResourceSlices is
named, with the evidence and the fix; with them the run passes as usual."""

import dataclasses

from gpu_pool.cli.sources import settings_pools
from gpu_pool.settings import load_settings
from tests.cli.test_dra_verify_doctor import assembly
from tests.support.command import run
from tests.support.fake_kube import SCALE_UP, Scenario, node, resource_slice

NODE = "ip-10-0-1-5.ec2.internal"


def efa_dra_record():
    """The default pool's record, as an EFA DRA pool's (its GPUs the device plugin's)."""
    (record,) = settings_pools(load_settings({"pools": {"gpu": {}}}, None)).records
    return dataclasses.replace(record, efa_software="dra-driver")


def scenario(**kw):
    return Scenario(events=[(2, SCALE_UP)], nodes=[(4, node())], **kw)


def test_a_node_without_efa_resource_slices_is_named(tmp_path, capsys):
    code, fake = run(tmp_path, scenario(), *assembly(tmp_path, efa_dra_record()))
    out = capsys.readouterr().out
    assert code == 1
    assert (
        "verify: FAILED while waiting for 'efa published': no ResourceSlice of dra.net on the "
        "node: the EFA DRA driver publishes no EFA interface\n"
    ) in out
    assert (
        f"  evidence: kubectl get resourceslices --field-selector spec.nodeName={NODE},"
        "spec.driver=dra.net: none\n"
    ) in out
    assert "kubectl -n kube-system get ds aws-dranet" in out
    # The EFA claim template was created, and deleted after the pod.
    assert [k for k, _, _ in fake.created_objects] == ["ResourceClaimTemplate"]
    assert [k for k, _ in fake.deleted_objects] == ["ResourceClaimTemplate"]


def test_a_node_with_efa_resource_slices_passes(tmp_path, capsys):
    slices = [(4, resource_slice(NODE, "dra.net", devices=1))]
    code, _ = run(
        tmp_path,
        scenario(resource_slices=slices, scheduled_at=8, succeeded_at=10),
        *assembly(tmp_path, efa_dra_record()),
    )
    out = capsys.readouterr().out
    assert code == 0, out
