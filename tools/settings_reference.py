"""Write the settings reference into docs/settings.md from the settings models' descriptions.

    python tools/settings_reference.py

Replaces what stands between the two markers (gpu_pool/settings/reference.py); everything else in
the page stays as written. The app's defaults come from the models and the `gpu-pool` context of
cdk.json. tests/unit/test_settings_reference.py fails until this has been run
after a settings change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpu_pool.settings import CONTEXT_KEY  # noqa: E402
from gpu_pool.settings.reference import END, START, settings_reference  # noqa: E402

PAGE = ROOT / "docs" / "settings.md"


def app_context() -> dict:
    """The bundled app's settings context, from cdk.json."""
    return json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"][CONTEXT_KEY]


def main() -> int:
    text = PAGE.read_text(encoding="utf-8")
    before, _, rest = text.partition(START)
    _, found, after = rest.partition(END)
    if not found:
        print(f"{PAGE}: the markers {START!r} and {END!r} are missing", file=sys.stderr)
        return 1
    PAGE.write_text(f"{before}{START}\n\n{settings_reference(app_context())}\n{END}{after}", encoding="utf-8")
    print(f"wrote the settings reference into {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
