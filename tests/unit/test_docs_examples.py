"""The README's and docs' examples, run as a user copies them (tests/support/docs_examples.py
finds them): each settings file loads over cdk.json as the app reads it and passes every rule
without an error or a warning it does not acknowledge (tests/synth/test_docs_examples.py synthesizes them); a block its
page marks as partial is YAML that is not a settings file; each `gpu-pool` command parses with
the command's own parser; the README's `./dev` commands name the file its example is."""

from __future__ import annotations

import re
import shlex

import pytest

from gpu_pool.checks import check_settings
from gpu_pool.cli.main import parser as _parser
from gpu_pool.plan.pool import plan_pools
from gpu_pool.settings import ConfigError, load_settings
from tests.support.docs_examples import (
    as_the_app_reads,
    commands,
    settings_example,
    settings_examples,
    yaml_examples,
)
from tests.support.paths import ROOT


@pytest.mark.parametrize("example", settings_examples(), ids=lambda e: e.id)
def test_each_settings_example_loads_and_passes_every_rule(example, tmp_path):
    settings = as_the_app_reads(example, tmp_path)
    found = check_settings(settings, plan_pools(settings)).all()
    # A warning the example acknowledges, with its reason, is one the page explains.
    assert [str(f) for f in found if f.error or f.rule not in settings.acknowledge] == []


def test_every_page_with_a_settings_example_is_read():
    assert {e.page for e in settings_examples()} == {
        "README.md",
        "docs/dra-and-ultraservers.md",
        "docs/existing-clusters.md",
        "docs/gpu-health.md",
        "docs/gpu-sharing.md",
        "docs/provisioners.md",
        "docs/settings.md",
        "docs/training.md",
    }


PARTIAL = [e for e in yaml_examples() if e.partial is not None]


@pytest.mark.parametrize("example", PARTIAL, ids=lambda e: f"{e.id} ({e.partial})")
def test_a_block_marked_partial_is_yaml_but_not_a_settings_file(example):
    data = example.data()
    assert isinstance(data, dict)
    with pytest.raises(ConfigError):
        load_settings(data, None)


@pytest.mark.parametrize(("page", "command"), commands(), ids=lambda v: v)
def test_each_command_parses_with_the_commands_parser(page, command):
    words = shlex.split(command)
    assert words[0] == "gpu-pool"
    try:
        _parser().parse_args(words[1:])
    except SystemExit as exit:  # --help exits 0 after printing; a parse error exits 2
        assert exit.code == 0, f"{page}: `{command}` does not parse"


# The documented commands that need neither AWS nor a cluster nor a placeholder filled in run as
# written, from the project's root (the bundled app's settings).
OFFLINE = sorted(
    {command for _, command in commands() if shlex.split(command)[1:] == ["plan"]}
)


@pytest.mark.parametrize("command", OFFLINE)
def test_each_offline_command_runs_as_written(command, monkeypatch, capsys):
    from gpu_pool.cli.main import main

    monkeypatch.chdir(ROOT)
    assert main(shlex.split(command)[1:]) == 0
    assert capsys.readouterr().out.startswith("Cluster gpu-pool")


def test_the_offline_commands_are_found():
    assert OFFLINE == ["gpu-pool plan"]


def test_commands_are_found_on_the_pages_that_show_them():
    found = {command for _, command in commands()}
    assert {"gpu-pool verify --pool training", "gpu-pool doctor"} <= found


def test_the_readmes_dev_commands_name_its_example_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names = re.findall(r"-c config=(\S+)", readme)
    example = settings_example("README.md", "A first example")
    assert names
    assert all(example.text.startswith(f"# {name}:") for name in names)
