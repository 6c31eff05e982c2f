"""Every relative link of README.md and docs/*.md resolves: the file exists and, for
``page.md#anchor``, the page has a heading with that anchor (GitHub's rule: lower case, drop
what is not a letter, digit, space, ``-`` or ``_``, spaces to ``-``; a repeated heading gets
``-1``, ``-2``). Headings and links inside fenced code blocks do not count."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from readme_commands import pages

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose(text: str) -> list[str]:
    """The page's lines outside fenced code blocks (inline code spans blanked)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    seen: Counter[str] = Counter()
    found = set()
    for line in _prose(page.read_text(encoding="utf-8")):
        heading = HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return frozenset(found)


def links(page: Path) -> list[str]:
    found = []
    for line in _prose(page.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)  # a link written as code is not a link
        found += [
            target for target in LINK.findall(line) if not re.match(r"[a-z][a-z0-9+.-]*:", target)
        ]
    return found


def broken(source: Path) -> list[str]:
    """The links of ``source`` that do not resolve, each with why."""
    found = []
    for target in links(source):
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.exists():
            found.append(f"{target}: no such file {resolved}")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            found.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return found


@pytest.mark.parametrize("page", [p.relative_to(REPO).as_posix() for p in pages(REPO)])
def test_every_relative_link_and_anchor_resolves(page: str) -> None:
    assert not broken(REPO / page), f"{page}:\n" + "\n".join(broken(REPO / page))


def test_slugs_follow_githubs_rule() -> None:
    assert slug("1. Compare inside one sweep") == "1-compare-inside-one-sweep"
    assert (
        slug("Quick start (Python 3.11+, no API key, offline)")
        == "quick-start-python-311-no-api-key-offline"
    )
    assert slug("Run `physassist-eval` on real data") == "run-physassist-eval-on-real-data"
    assert (
        slug("10. Recipes (each is done in `tests/docs/test_recipes.py`)")
        == "10-recipes-each-is-done-in-testsdocstest_recipespy"
    )


def test_the_checker_finds_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(
        "# A page\n\n## Its part\n\n```\n# not a heading\n[x](nowhere.md)\n```\n"
    )
    (tmp_path / "b.md").write_text(
        "[ok](a.md#its-part) [gone](c.md) [bad](a.md#not-a-heading) `[code](d.md)` [up](#b)\n"
    )
    assert broken(tmp_path / "a.md") == []
    assert broken(tmp_path / "b.md") == [
        f"c.md: no such file {tmp_path / 'c.md'}",
        "a.md#not-a-heading: no heading #not-a-heading in a.md",
        "#b: no heading #b in b.md",
    ]
