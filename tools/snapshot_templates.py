"""Synthesize the default app, examples/ and the test settings into one folder, for a diff.

A refactor that must not change what users deploy (module moves, renames, de-duplication) is
checked by running this before and after and comparing the folders byte for byte:

    python tools/snapshot_templates.py /tmp/before      # on the old commit
    python tools/snapshot_templates.py /tmp/after       # on the new one
    diff -r /tmp/before /tmp/after && echo identical

Each app runs as the CDK CLI runs it (`python app.py` with CDK_OUTDIR and CDK_CONTEXT_JSON), so
the templates are exactly what `cdk synth` writes. Asset staging folders are left out: their
names are the assets' hashes, which the templates already carry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.settings import NAMED_SETTINGS  # noqa: E402


def _context(settings: dict[str, object] | None) -> dict[str, object]:
    context: dict[str, object] = json.loads((ROOT / "cdk.json").read_text())["context"]
    if settings is not None:
        context["gpu-pool"] = settings
    return context


def _synth(script: Path, context: dict[str, object] | None, target: Path) -> None:
    out = Path(tempfile.mkdtemp(prefix="snapshot-"))
    # This checkout's gpu_pool, not whichever one the venv installed (examples/ runs elsewhere).
    env = {**os.environ, "CDK_OUTDIR": str(out), "PYTHONPATH": str(ROOT)}
    if context is not None:
        env["CDK_CONTEXT_JSON"] = json.dumps(context)
    subprocess.run(
        [sys.executable, script.name], cwd=script.parent, env=env, check=True, capture_output=True
    )
    target.mkdir(parents=True)
    for template in sorted(out.glob("*.template.json")):
        shutil.copy(template, target / template.name)
    shutil.rmtree(out)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/snapshot_templates.py DIR", file=sys.stderr)
        return 2
    target = Path(argv[0])
    if target.exists():
        print(f"{target} exists; give a new folder", file=sys.stderr)
        return 2
    apps: list[tuple[str, Path, dict[str, object] | None]] = [
        ("default", ROOT / "app.py", _context(None)),
        ("examples", ROOT / "examples" / "app.py", None),
    ]
    apps += [(name, ROOT / "app.py", _context(s)) for name, s in NAMED_SETTINGS.items()]
    for name, script, context in apps:
        print(f"... {name}", file=sys.stderr, flush=True)
        _synth(script, context, target / name)
    print(f"{len(apps)} apps synthesized into {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
