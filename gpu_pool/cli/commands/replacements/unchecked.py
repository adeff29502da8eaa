"""The facts a synthesized assembly left unchecked (gpu_pool/cdk/lookups/context.py): each is a
`gpu-pool:unchecked` metadata entry of its stack, whose message names the fact and the command
that reads it. `gpu-pool replacements --cdk-out` (so `./dev deploy`) refuses such an assembly:
its template may rest on placeholders (the VPC's zones) or on rules that never ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpu_pool.cli.errors import CliError
from gpu_pool.cli.files import json_object
from gpu_pool.model.findings import UNCHECKED_METADATA


def refuse_unchecked(out: Path, stacks: list[tuple[str, dict[str, Any]]]) -> None:
    """Raise CliError naming every unchecked fact the deploy waits for in these stacks (name,
    manifest artifact) of the assembly at `out` (an entry without `blocks_deploy`, as a
    hand-written one, waits); return when there is none."""
    found = [
        f"  {stack}: {entry['data']['message']}"
        for stack, artifact in stacks
        for entries in _metadata(out, artifact).values()
        for entry in entries
        if entry.get("type") == UNCHECKED_METADATA and entry["data"].get("blocks_deploy", True)
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
        metadata.update(json_object(str(out / extra), "replacements", "a stack's metadata"))
    return metadata
