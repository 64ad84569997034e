"""The migration guides are the translation tables written out: each page is what
cambrian/task/peer_guide.py writes, and lists every peer key a rule reads or leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest

from cambrian.task.peer_guide import PAGES, render
from cambrian.task.peer_rules import (
    OPENEVOLVE_IGNORED,
    OPENEVOLVE_RULES,
    SHINKA_IGNORED,
    SHINKA_RULES,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
TABLES = {"openevolve": (OPENEVOLVE_RULES, OPENEVOLVE_IGNORED),
          "shinkaevolve": (SHINKA_RULES, SHINKA_IGNORED)}


@pytest.mark.parametrize("peer", sorted(PAGES))
def test_the_page_is_the_tables_written_out(peer: str):
    page = (DOCS / PAGES[peer]).read_text()
    assert page == render(peer), (
        f"docs/{PAGES[peer]} differs from the tables: run "
        "`.venv/bin/python -m cambrian.task.peer_guide`")


@pytest.mark.parametrize("peer", sorted(PAGES))
def test_the_page_lists_every_mapped_and_every_ignored_key(peer: str):
    page = (DOCS / PAGES[peer]).read_text()
    rules, ignored = TABLES[peer]
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    for rule in rules:
        row = next(r for r in rows if f"`{rule.sources[0]}`" in r.split(" | ")[0])
        assert all(f"`{key}`" in row for key in rule.sources) and rule.becomes in row
    for key, why in ignored.items():
        assert f"| `{key}` | {why} |" in page
    # No key both translated and called ignored.
    assert not {k for r in rules for k in r.sources} & set(ignored)
