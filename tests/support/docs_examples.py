"""The examples of README.md and docs/*.md as a user copies them: every YAML block is a whole
settings file unless the page marks it, on the line before its fence, as
`<!-- partial example: what it is -->` (a pod's spec, a file another tool reads) or as
`<!-- fleet example: PATH -->` (a file of a fleet, saved as PATH beside the page's other fleet
files: a fleet file, or a cluster's file a fleet file or directory holds; docs/fleet.md); every
inline `gpu-pool ...` command is one to run (a synopsis, with its `[...]`, `(...|...)` or `/`,
is not).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gpu_pool.settings import CONTEXT_KEY, AppSettings, load_settings
from tests.support.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_PARTIAL = re.compile(r"<!-- partial example: (.+?) -->")
_FLEET = re.compile(r"<!-- fleet example: (\S+) -->")
_SYNOPSIS = re.compile(r"[\[\](|]|\s/\s|\.\.\.")


@dataclass(frozen=True)
class Example:
    page: str  # relative to the project, e.g. docs/training.md
    section: str  # the heading it stands under
    text: str
    partial: str | None  # what the page says it is, when it is not a whole settings file
    fleet_path: str | None = None  # where a fleet's file is saved, relative to the fleet's folder

    @property
    def id(self) -> str:
        return f"{self.page}#{self.section}"

    def data(self) -> Any:
        return yaml.safe_load(self.text)


@cache
def yaml_examples() -> tuple[Example, ...]:
    """Every ```yaml block of the pages, in page order, with the heading it stands under (a
    `#` line inside a fence is a YAML comment, not a heading)."""
    found = []
    for page in PAGES:
        heading, fence, before, block = "", None, "", []
        for line in page.read_text(encoding="utf-8").splitlines(keepends=True):
            if fence is None and line.startswith("```"):
                fence, block = line[3:].strip(), []
                marker = _PARTIAL.fullmatch(before.strip())
                fleet = _FLEET.fullmatch(before.strip())
            elif fence is None:
                heading = line.lstrip("#").strip() if re.match(r"#+ ", line) else heading
            elif line.startswith("```"):
                if fence == "yaml":
                    found.append(
                        Example(
                            page.relative_to(ROOT).as_posix(),
                            heading,
                            "".join(block),
                            marker.group(1) if marker else None,
                            fleet.group(1) if fleet else None,
                        )
                    )
                fence = None
            else:
                block.append(line)
            before = line
    return tuple(found)


def settings_examples() -> list[Example]:
    """The YAML blocks that are whole settings files."""
    return [e for e in yaml_examples() if e.partial is None and e.fleet_path is None]


def fleet_examples(folder: Path) -> dict[str, Path]:
    """Every page's fleet files saved under `folder/<page>/` by their paths: {page: its folder}."""
    pages: dict[str, Path] = {}
    for example in yaml_examples():
        if example.fleet_path is not None:
            pages.setdefault(example.page, folder / example.page.replace("/", "-"))
            path = pages[example.page] / example.fleet_path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(example.text, encoding="utf-8")
    return pages


def settings_example(page: str, section: str) -> Example:
    """The one settings example under a page's heading (which starts with `section`)."""
    (example,) = [
        e for e in settings_examples() if e.page == page and e.section.startswith(section)
    ]
    return example


APP_CONTEXT = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"][CONTEXT_KEY]


def as_the_app_reads(example: Example, folder: Path) -> AppSettings:
    """The example saved as a file and read as the app reads `-c config=FILE`: over cdk.json."""
    path = folder / "example.yaml"
    path.write_text(example.text, encoding="utf-8")
    return load_settings(APP_CONTEXT, str(path))


def app_settings(example: Example, folder: Path) -> dict[str, Any]:
    """`as_the_app_reads`, as the settings mapping the synth helpers take (tests/support/cfn.py,
    looked_up.py): the same mapping for every test of one example, so it is synthesized once."""
    return as_the_app_reads(example, folder).model_dump(mode="json", exclude_unset=True)


def commands() -> list[tuple[str, str]]:
    """(page, command) for every inline `gpu-pool ...` code span that is a command to run."""
    found = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for span in re.findall(r"`(gpu-pool [^`]+)`", text):
            if not _SYNOPSIS.search(span):
                found.append((page.relative_to(ROOT).as_posix(), " ".join(span.split())))
    return found
