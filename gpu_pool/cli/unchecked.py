"""The facts a synthesized assembly left unchecked (gpu_pool/cdk/lookups/context.py): each is a
`gpu-pool:unchecked` metadata entry of its stack, whose message names the fact and the command
that reads it. `gpu-pool replacements --cdk-out` (so `./dev deploy`) refuses such an assembly:
its template may rest on placeholders (the VPC's zones) or on rules that never ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpu_pool.cli.errors import CliError
from gpu_pool.model.findings import UNCHECKED_METADATA


def refuse_unchecked(out: Path, stacks: list[str]) -> None:
    """Raise CliError naming every unchecked fact of `stacks` (artifact ids) in the assembly
    at `out`; return when there is none."""
    manifest = _json(out / "manifest.json")
    found = [
        f"  {stack}: {entry['data']['message']}"
        for stack in stacks
        for entries in _metadata(out, manifest["artifacts"][stack]).values()
        for entry in entries
        if entry.get("type") == UNCHECKED_METADATA
    ]
    if found:
        raise CliError(
            f"replacements: {out} was synthesized with facts unchecked, so it is not deployed "
            "(run the synth again with credentials of each stack's account, which checks and "
            "caches them in cdk.context.json, or set what a message names):\n" + "\n".join(found)
        )


def _metadata(out: Path, artifact: dict[str, Any]) -> dict[str, Any]:
    """A stack artifact's metadata by construct path: in the manifest, or in the file it names
    (aws-cdk-lib writes `additionalMetadataFile` beside the template)."""
    extra = artifact.get("additionalMetadataFile")
    metadata = dict(artifact.get("metadata", {}))
    if extra:
        metadata.update(_json(out / extra))
    return metadata


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CliError(f"replacements: cannot read {path}: {err}") from None
