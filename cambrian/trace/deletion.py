"""Deletion-aware search support (seed 001 §5.2, §6): what a candidate's line of descent has
already deleted, how much of a new child merely re-introduces it, and a prompt section that
shows the model this history.

Lines are compared after the cycling module's normalisation (trailing whitespace stripped;
blank and punctuation-only lines never count). *Non-trivial* additionally leaves out
comment-only lines and lines that are one bare word (``else:``, ``break;``, ``pass``), which
re-appear in any edit without meaning a decision is being undone.
"""

from __future__ import annotations

import re
from functools import lru_cache

from cambrian.core.objective import MAXIMIZE, MINIMIZE, Objective
from cambrian.lang.lines import is_comment_only, language_named, normalised_lines
from cambrian.store.store import Store
from cambrian.trace import cycling
from cambrian.trace.deletion_index import Ancestor, ancestry, lineage_edits, run_facts, sources

DEFAULT_MAX_LINES = 20
MAX_LINE_CHARS = 100
_BARE_WORD = re.compile(r"^\s*\w+\s*[:;]?\s*$")


@lru_cache(maxsize=65536)
def is_trivial(line: str, language: str) -> bool:
    return bool(_BARE_WORD.match(line)) or is_comment_only(line, language_named(language))


def deleted_lines_in_lineage(store: Store, candidate_id: int | str) -> set[str]:
    """Normalised non-trivial lines deleted by any edit on the candidate's ancestry (its own
    edit from its parent included)."""
    language = run_facts(store)[1]
    deleted: set[str] = set()
    for edit in lineage_edits(store, ancestry(store, candidate_id)):
        deleted.update(edit.deleted)
    return {line for line in deleted if not is_trivial(line, language)}


def reintroduction_share(parent_source: str, child_source: str, deleted: set[str]) -> float:
    """Share of the lines the child adds (blank and punctuation-only lines excluded) that are
    byte-identical, after normalisation, to a line in ``deleted``; 0.0 when nothing is added."""
    return cycling.reintroduction_share(parent_source, child_source, deleted)


def _effect(parent: Ancestor, child: Ancestor, objective: Objective) -> str:
    def shown(program: Ancestor) -> str:
        return f"{program.score:.6g}" if program.correct and program.score is not None \
            else "failed"

    if not child.correct or child.score is None:
        verdict = "the program then failed"
    elif not parent.correct or parent.score is None:
        verdict = "it fixed a failing program"
    elif child.score == parent.score:
        verdict = "no change"
    else:
        verdict = "better" if objective.better(child.score, parent.score) else "worse"
    return f"{shown(parent)} -> {shown(child)}, {verdict}"


def deletion_history_text(store: Store, candidate_id: int | str, *,
                          max_lines: int = DEFAULT_MAX_LINES, as_note: bool = False) -> str:
    """A compact prompt section: non-trivial lines this lineage deleted that the candidate does
    not contain again, most recent deletion first, each with the score effect of the edit that
    removed it and how often the lineage removed it. Empty when there is nothing to show.

    ``as_note``: the same content as one item of a prompt's bulleted notes (a lead sentence and
    indented sub-items) instead of a section with its own heading."""
    _, language, maximizes = run_facts(store)
    objective = MAXIMIZE if maximizes else MINIMIZE
    chain = ancestry(store, candidate_id)
    own = sources(store, {chain[0].id}).get(chain[0].id) if chain else None
    if own is None:
        return ""
    present = set(normalised_lines(own))
    entries: dict[str, tuple[str, int]] = {}  # line -> (first-seen description, times deleted)
    for edit in lineage_edits(store, chain):
        for line in dict.fromkeys(edit.deleted):
            if line in present or is_trivial(line, language):
                continue
            if line in entries:
                entries[line] = (entries[line][0], entries[line][1] + 1)
            else:
                effect = _effect(edit.parent, edit.child, objective)
                entries[line] = (f"removed by program {edit.child.id} ({effect})", 1)
    if not entries:
        return ""
    rows = []
    for line, (where, times) in list(entries.items())[:max_lines]:
        text = line.strip()
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS - 3] + "..."
        again = f"; deleted {times} times in this lineage" if times > 1 else ""
        rows.append(f"- `{text}` — {where}{again}")
    more = len(entries) - len(rows)
    if more > 0:
        rows.append(f"- ... and {more} more")
    explanation = ("scores before -> after that edit). Adding one back undoes a decision the "
                   "search already made: do it only when you mean to.")
    if as_note:
        return ("Lines this lineage already deleted: earlier edits on this program's line of "
                "descent removed them (most recent first; " + explanation + "\n"
                + "\n".join("  " + row for row in rows))
    return ("## Lines this lineage already deleted\n"
            "Earlier edits on this program's line of descent removed these lines (most recent "
            "first; " + explanation + "\n" + "\n".join(rows) + "\n")
