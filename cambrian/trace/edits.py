"""Parent→child edits of a run as unified diffs: the unit the edit taxonomy labels (seed 001
§4(a), §5.1).

Each edit carries whether it improved on its parent, which the helpfulness odds ratio of
:mod:`cambrian.trace.taxonomy_stats` conditions on. The judge never sees scores.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from cambrian.core.status import CandidateStatus
from cambrian.trace.model import CandidateRecord, Trace, sha256_text

DIFF_CONTEXT_LINES = 3
# Longest diff shown to the judge; longer ones keep their head and tail (the changed middle of
# a rewrite is usually visible at both ends).
MAX_DIFF_CHARS = 6000


@dataclass(frozen=True)
class Edit:
    child_id: str
    parent_id: str
    iteration: int
    diff: str  # as shown to the judge (possibly shortened)
    parent_score: float | None
    child_score: float | None
    improved: bool  # the child is correct and scores strictly better than its parent

    @property
    def diff_sha256(self) -> str:
        return sha256_text(self.diff)


def unified_diff(parent_source: str, child_source: str, *,
                 context_lines: int = DIFF_CONTEXT_LINES) -> str:
    """Hunks only (no ``---``/``+++`` file header), each line newline-terminated."""
    lines = difflib.unified_diff(parent_source.splitlines(), child_source.splitlines(),
                                 n=context_lines, lineterm="")
    body = [line for index, line in enumerate(lines) if index >= 2]  # drop the file header
    return "".join(line + "\n" for line in body)


def shorten(diff: str, max_chars: int = MAX_DIFF_CHARS) -> str:
    if len(diff) <= max_chars:
        return diff
    keep = max_chars // 2
    head = diff[:keep].rsplit("\n", 1)[0]
    tail = diff[-keep:].split("\n", 1)[-1]
    skipped = diff.count("\n") - head.count("\n") - tail.count("\n")
    return f"{head}\n... [{skipped} diff lines omitted] ...\n{tail}"


def _improved(trace: Trace, parent: CandidateRecord, child: CandidateRecord) -> bool:
    if child.status is not CandidateStatus.CORRECT or child.score is None:
        return False
    if parent.status is not CandidateStatus.CORRECT or parent.score is None:
        return True  # a working child of a failing parent
    return trace.better(child.score, parent.score)


def collect_edits(trace: Trace, *, max_diff_chars: int = MAX_DIFF_CHARS) -> list[Edit]:
    """Every evaluated child whose parent has a source and differs from it, in run order."""
    edits: list[Edit] = []
    for child in trace.evaluated():
        parent_id = trace.parent_of(child.id)
        if parent_id is None:
            continue
        parent = trace.candidate(parent_id)
        if parent.source is None or child.source is None or parent.source == child.source:
            continue
        diff = unified_diff(parent.source, child.source)
        if not diff:
            continue
        edits.append(Edit(
            child_id=child.id, parent_id=parent.id, iteration=child.iteration,
            diff=shorten(diff, max_diff_chars), parent_score=parent.score,
            child_score=child.score, improved=_improved(trace, parent, child),
        ))
    return edits
