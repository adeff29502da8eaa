"""docs/fleet.md as a user copies it: its fleet files (tests/support/docs_examples.py saves them
by the paths the page gives) load with the page's own `-c config=` commands, every cluster
passes every rule, and the page names exactly the stacks they make."""

from __future__ import annotations

import re

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import load_fleet
from tests.support.docs_examples import APP_CONTEXT, fleet_examples
from tests.support.paths import ROOT

PAGE = "docs/fleet.md"
TEXT = (ROOT / PAGE).read_text(encoding="utf-8")
# The page's `./dev synth|deploy -c config=...` command lines.
CONFIGS = sorted(set(re.findall(r"^\./dev \w+ -c config=(\S+)", TEXT, re.MULTILINE)))


def test_the_page_shows_both_forms():
    assert CONFIGS == ["clusters/", "fleet.yaml"]


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    """{config: its Fleet}, for each `-c config=` of the page."""
    folder = fleet_examples(tmp_path_factory.mktemp("docs"))[PAGE]
    return {config: load_fleet(APP_CONTEXT, str(folder / config)) for config in CONFIGS}


def test_every_cluster_of_the_page_passes_every_rule(fleets):
    for config, fleet in fleets.items():
        for cluster in fleet.clusters:
            found = check_settings(cluster.settings, plan_pools(cluster.settings)).all()
            assert [str(f) for f in found] == [], f"{config}: {cluster.source}"
        assert fleet.warnings == (), config


def test_the_page_names_exactly_the_stacks_its_fleets_make(fleets):
    made = {c.stack_name for fleet in fleets.values() for c in fleet.clusters}
    assert made == {
        "GpuPool-inference-us-east-1",
        "GpuPool-inference-eu-west-1",
        "GpuPool-research-us-west-2",
    }
    assert set(re.findall(r"`(GpuPool-[a-z0-9-]+)`", TEXT)) == made


def test_the_fleet_files_defaults_merge_as_the_page_says(fleets):
    us, eu, research = (c.settings for c in fleets["fleet.yaml"].clusters)
    assert [(s.account, s.region, s.cluster.name) for s in (us, eu, research)] == [
        ("111111111111", "us-east-1", "inference"),
        ("111111111111", "eu-west-1", "inference"),
        ("222222222222", "us-west-2", "research"),
    ]
    serve = {s.region: (s.pools["serve"].instance_types, s.pools["serve"].max_size) for s in (us, eu)}
    assert serve == {
        "us-east-1": (["g6e.xlarge", "g5.xlarge"], 16),
        "eu-west-1": (["g6e.xlarge", "g5.xlarge"], 8),
    }
    assert sorted(research.pools) == ["serve", "train"]
