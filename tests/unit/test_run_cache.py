"""tests/support/run_cache.py: what one xdist worker computed, another reads instead of
computing it again; without workers, everything is computed where it is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import run_cache


@pytest.fixture
def shared(tmp_path, monkeypatch) -> Path:
    """A run shared through `tmp_path/run`, as an xdist worker's is."""
    directory = tmp_path / "run"
    directory.mkdir()
    monkeypatch.setattr(run_cache, "_shared", [directory])
    return directory


def test_a_value_is_computed_by_the_first_worker_and_read_by_the_next(shared):
    calls = []

    def compute():
        calls.append(1)
        return {"Resources": {"Pool": {"Type": "AWS::EKS::Nodegroup"}}}

    first = run_cache.shared_json("template-a", compute)
    second = run_cache.shared_json("template-a", compute)
    assert first == ({"Resources": {"Pool": {"Type": "AWS::EKS::Nodegroup"}}}, True)
    assert second == (first[0], False)
    assert calls == [1]
    assert run_cache.sharing()
    # Published whole under its name; no partial file left beside it.
    assert sorted(p.name for p in shared.iterdir()) == ["template-a.json"]


def test_a_directory_is_built_once_where_it_stays(shared, tmp_path):
    built = []

    def build(directory: Path) -> Path:
        built.append(directory)
        (directory / "out").mkdir()
        (directory / "out" / "manifest.json").write_text("{}")
        return directory / "out"

    first = run_cache.shared_directory("fleet", tmp_path / "own-1", build)
    second = run_cache.shared_directory("fleet", tmp_path / "own-2", build)
    # The second worker gets what the first one's build returned, at the place it was built.
    assert first == second == shared / "fleet" / "out"
    assert built == [shared / "fleet"]
    assert (second / "manifest.json").read_text() == "{}"


def test_a_worker_that_asks_while_another_builds_builds_its_own(shared, tmp_path):
    (shared / "fleet").mkdir()  # claimed by another worker, not done yet
    own = tmp_path / "own"
    own.mkdir()

    def build(directory: Path) -> Path:
        (directory / "x").touch()
        return directory / "x"

    assert run_cache.shared_directory("fleet", own, build) == own / "x"
    assert list((shared / "fleet").iterdir()) == []


def test_without_workers_each_call_computes_in_its_own_place(tmp_path, monkeypatch):
    monkeypatch.setattr(run_cache, "_shared", [])
    assert not run_cache.sharing()
    assert run_cache.shared_json("template-a", lambda: [1]) == ([1], True)
    own = tmp_path / "own"
    own.mkdir()
    assert run_cache.shared_directory("fleet", own, lambda d: d) == own
    assert list(tmp_path.iterdir()) == [own]
