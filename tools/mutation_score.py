"""The score of the last `mutmut run` (./dev mutate), and each surviving mutant by name.

mutmut records one exit code per mutant in mutants/**/*.py.meta: 0 means the tests still
passed (the mutant survived), 33 that no test covers it, anything else that it was killed
(a failing test, or a timeout). `mutmut show <name>` prints a survivor's diff.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import date
from pathlib import Path

NO_TESTS = 33


def main(root: str = "mutants") -> int:
    codes: dict[str, int | None] = {}
    for meta in sorted(Path(root).rglob("*.py.meta")):
        codes.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    if not codes:
        print("no mutation results: run ./dev mutate first", file=sys.stderr)
        return 2
    survived = sorted(name for name, code in codes.items() if code == 0)
    untested = sorted(name for name, code in codes.items() if code == NO_TESTS)
    not_run = [name for name, code in codes.items() if code is None]
    killed = len(codes) - len(survived) - len(untested) - len(not_run)
    judged = killed + len(survived) + len(untested)
    print(
        f"mutation score {date.today()}: {killed}/{judged} killed ({killed / judged:.0%}); "
        f"{len(survived)} survived, {len(untested)} not covered by a test, {len(not_run)} not run"
    )
    by_module = Counter(name.rsplit(".", 1)[0] for name in survived + untested)
    for module, count in sorted(by_module.items()):
        print(f"  {module}: {count}")
    for name in survived + untested:
        print(f"  {'survived' if name in survived else 'no test '} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
