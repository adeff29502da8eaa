"""#39 item 1: `./dev deploy` refuses to deploy on unchecked facts. It runs `gpu-pool
replacements --cdk-out cdk.out`, which refuses an assembly whose stacks carry a
`gpu-pool:unchecked` metadata entry (gpu_pool/cdk/lookups/context.py), `--yes` or not, acknowledged
warning or not, before it reads anything from AWS."""

from __future__ import annotations

import json

import pytest

from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.cli.main import main
from gpu_pool.settings import load_settings
from tests.support.cfn import unvalidated_app

BOUND = {
    "account": "123456789012",
    "region": "us-east-1",
    "pool": {"instance_types": ["g6.xlarge"]},
    # An acknowledged warning is not shown, and the deploy is still refused.
    "acknowledge": {"GP-REGION-08": "CI synthesizes without credentials"},
}


def _no_aws(service: str):
    raise AssertionError(f"refused before any AWS call, not {service}")


def _refusal(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_an_assembly_synthesized_without_its_lookups_is_not_deployed(tmp_path, capsys):
    out = tmp_path / "cdk.out"
    app = unvalidated_app(outdir=str(out))
    GpuPoolStack(app, "GpuPool", settings=load_settings(BOUND, None))
    app.synth()
    assert main(["replacements", "--cdk-out", str(out), "--yes"], aws=_no_aws) == 2
    lines = _refusal(capsys)
    assert lines[0] == (
        f"gpu-pool: replacements: {out} was synthesized with facts unchecked, so it is not "
        "deployed (run the synth again with credentials of each stack's account, which checks "
        "and caches them in cdk.context.json, or set what a message names):"
    )
    # The Region's zones alone (the VPC's, naming cluster.zones): without region lookups the
    # offerings and AMI parameters are not looked up.
    assert [line.split(": not checked")[0] for line in lines[1:]] == [
        "  GpuPool: cluster.zones",
    ]


@pytest.mark.parametrize("where", ["manifest", "file"])
def test_the_entries_are_read_from_the_manifest_or_its_metadata_file(tmp_path, capsys, where):
    """aws-cdk-lib writes a stack's metadata into the manifest or, as 2.275 does, into the
    file its `additionalMetadataFile` names."""
    out = tmp_path / "cdk.out"
    out.mkdir()
    (out / "T.template.json").write_text("{}")
    entries = {
        "/T": [
            {"type": "aws:cdk:warning", "data": "not a fact"},
            {"type": "gpu-pool:unchecked", "data": {"rule": "GP-REGION-08", "message": "m"}},
        ]
    }
    artifact = {
        "type": "aws:cloudformation:stack",
        "environment": "aws://123456789012/us-east-1",
        "properties": {"templateFile": "T.template.json"},
    }
    if where == "manifest":
        artifact["metadata"] = entries
    else:
        (out / "T.metadata.json").write_text(json.dumps(entries))
        artifact["additionalMetadataFile"] = "T.metadata.json"
    (out / "manifest.json").write_text(json.dumps({"artifacts": {"T": artifact}}))
    assert main(["replacements", "--cdk-out", str(out), "--yes"], aws=_no_aws) == 2
    assert _refusal(capsys)[1:] == ["  T: m"]
