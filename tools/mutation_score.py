"""The score of the last `mutmut run` (./dev mutate), and each surviving mutant by name.

mutmut records one exit code per mutant in mutants/**/*.py.meta: 0 means the tests still
passed (the mutant survived), 33 that no test covers it, anything else that it was killed
(a failing test, or a timeout). `mutmut show <name>` prints a survivor's diff.

Survivors named in tools/mutation_equivalents.txt (`<name> <why no test can tell>`, one a
line) are equivalent mutants: they do not count against the score, and are listed apart. A
listed name that was killed, or that no longer exists, is reported, so the list stays true.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import date
from pathlib import Path

NO_TESTS = 33
EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.txt")


def equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """Each equivalent mutant's name and why it is equivalent."""
    named: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, why = line.partition(" ")
            named[name] = why.strip()
    return named


def main(root: str = "mutants") -> int:
    codes: dict[str, int | None] = {}
    for meta in sorted(Path(root).rglob("*.py.meta")):
        codes.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    if not codes:
        print("no mutation results: run ./dev mutate first", file=sys.stderr)
        return 2
    known = equivalents()
    equivalent = sorted(n for n, code in codes.items() if code == 0 and n in known)
    survived = sorted(n for n, code in codes.items() if code == 0 and n not in known)
    untested = sorted(name for name, code in codes.items() if code == NO_TESTS)
    not_run = [name for name, code in codes.items() if code is None]
    killed = len(codes) - len(survived) - len(equivalent) - len(untested) - len(not_run)
    judged = killed + len(survived) + len(untested)
    print(
        f"mutation score {date.today()}: {killed}/{judged} killed ({killed / judged:.1%}); "
        f"{len(survived)} survived, {len(untested)} not covered by a test, "
        f"{len(equivalent)} equivalent (named), {len(not_run)} not run"
    )
    by_module = Counter(name.rsplit(".", 1)[0] for name in survived + untested)
    for module, count in sorted(by_module.items()):
        print(f"  {module}: {count}")
    for name in survived + untested:
        print(f"  {'survived' if name in survived else 'no test '} {name}")
    stale = sorted(n for n in known if n in codes and codes[n] not in (0, None))
    gone = sorted(n for n in known if n not in codes)
    for name in stale:
        print(f"  listed equivalent but killed: {name}")
    for name in gone:
        print(f"  listed equivalent but no such mutant: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
