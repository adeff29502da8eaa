"""The README and docs/ pages link to each other: every relative link names a file that exists
and, with an anchor, a heading of that file (GitHub's slugs); every page is linked from the
README; and the pages cite upstream sources, never a file outside the project."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path):
    if path.suffix != ".md":
        return set()
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}


def _links(path):
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_heading(page):
    broken = []
    for target in _links(page):
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists() or (anchor and anchor not in _anchors(linked)):
            broken.append(target)
    assert broken == []


def test_the_readme_links_every_docs_page():
    linked = {t.partition("#")[0] for t in _links(ROOT / "README.md")}
    assert {f"docs/{p.name}" for p in PAGES[1:]} <= linked


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_cites_notes_outside_the_project(page):
    assert "FACTS.md" not in page.read_text(encoding="utf-8")
