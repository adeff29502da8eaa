"""Results the whole test run shares across pytest-xdist's workers: whichever worker asks first
computes one, the others read it (pytest-xdist's docs, "Making session-scoped fixtures execute
only once"). Each worker's own caches (functools.cache, session fixtures) already share a result
between the tests it runs; without this, both workers built every stack, assembly and binary
that tests on both of them used.

The results live in the run's base temporary directory, the parent of each worker's
(`tmp_path_factory.getbasetemp().parent`), which pytest keeps for its last three runs. Nothing
waits on a lock, so a computation that asks for another result cannot deadlock: a value is
written under a name of its own and renamed into place (a worker reads a whole one or none), a
directory is built by the worker that claimed it first and used once it is marked done; a
worker that asks while another computes computes its own, as every worker did before.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The run's shared directory; empty in a run without xdist workers, where one process runs
# every test and its own caches share everything.
_shared: list[Path] = []


def share_in(directory: Path) -> None:
    """Share results in `directory` from now on (tests/conftest.py, in each xdist worker)."""
    _shared[:] = [directory]


def key_of(text: str) -> str:
    """A file name for a result identified by `text` (settings JSON, say)."""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def sharing() -> bool:
    """Whether results are shared with other workers (else this process computes them all)."""
    return bool(_shared)


def shared_json(name: str, compute: Callable[[], Any]) -> tuple[Any, bool]:
    """The JSON value `compute` returns, computed once per run: (the value, whether this call
    computed it)."""
    if not _shared:
        return compute(), True
    path = _shared[0] / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8")), False
    value = compute()
    _publish(path, json.dumps(value))
    return value, True


def shared_directory(name: str, fallback: Path, build: Callable[[Path], Path]) -> Path:
    """What `build` makes in the empty directory it is given (its return: a path in it), built
    once per run; in a run without workers, or while another worker builds it, in `fallback`.
    It is built where it stays: an assembly keeps the paths it was synthesized at."""
    if not _shared:
        return build(fallback)
    final = _shared[0] / name
    done = final.with_name(f"{name}.done")
    if done.is_file():
        return final / done.read_text(encoding="utf-8")
    try:
        final.mkdir()  # the claim: one worker makes it, and builds there
    except FileExistsError:
        return build(fallback)
    made = build(final)
    _publish(done, str(made.relative_to(final)))
    return made


def _publish(path: Path, text: str) -> None:
    """Write `text` through a name of this process's own, then rename it into place (atomic)."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
