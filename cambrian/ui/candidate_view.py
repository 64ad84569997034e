"""The candidate page's read model: code (highlighted by Pygments), diffs, the LLM call that
produced it, its evaluation stages and per-case verdicts, and the guidance aimed at it."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from cambrian.core.status import CandidateStatus
from cambrian.mutate.kept_notes import shortened_in
from cambrian.store.rows import CandidateRow, ContextRow
from cambrian.store.store import Store
from cambrian.ui.file_views import FileEntry, file_diffs, file_tree

_FORMATTER = HtmlFormatter(cssclass="highlight", linenos="table")
MAX_DIFF_LINES = 4000


@dataclass(frozen=True)
class DiffLine:
    kind: str  # add | del | hunk | ctx | head
    text: str


@dataclass(frozen=True)
class Stage:
    stage: str
    worker: str
    status: str
    score: float | None
    public: dict[str, Any]
    text_feedback: str
    error: str
    stdout: str
    stderr: str
    duration_s: float
    verdicts: dict[str, Any]
    cases: list[dict[str, Any]]


@dataclass
class CandidateView:
    row: CandidateRow
    code_html: Markup
    parent: CandidateRow | None
    parent_diff: list[DiffLine]
    against: CandidateRow | None
    against_diff: list[DiffLine]
    context: ContextRow | None
    contexts: list[ContextRow]  # the conversation: earlier attempts first
    stages: list[Stage]
    children: list[dict[str, Any]]
    lineage: list[int]
    guidance: list[dict[str, Any]] = field(default_factory=list)
    targets: dict[str, str] = field(default_factory=dict)  # active targeted guidance
    # Its prompt showed a person's guidance shortened, or said it was left out (kept_notes.py).
    guidance_shortened: bool = False
    # A program of several files: its file tree, and a diff per changed file (file_views.py).
    files: list[FileEntry] = field(default_factory=list)
    parent_file_diffs: list[tuple[str, list[DiffLine]]] = field(default_factory=list)
    against_file_diffs: list[tuple[str, list[DiffLine]]] = field(default_factory=list)
    # The initial program its lineage starts from (None for that program itself), and the diff.
    initial: CandidateRow | None = None
    initial_diff: list[DiffLine] = field(default_factory=list)
    initial_file_diffs: list[tuple[str, list[DiffLine]]] = field(default_factory=list)

    @property
    def refusal(self) -> str:
        """Why the proposal was refused before evaluation (patch_failed, rejected)."""
        if self.row.status in (CandidateStatus.PATCH_FAILED, CandidateStatus.REJECTED,
                               CandidateStatus.DUPLICATE):
            return self.row.error or str(self.row.status)
        return ""


def highlighted(source: str, language: str) -> Markup:
    try:
        lexer = get_lexer_by_name(language or "text")
    except ClassNotFound:
        lexer = TextLexer()
    return Markup(highlight(source, lexer, _FORMATTER))


def diff_lines(before: str | None, after: str | None, before_name: str,
               after_name: str) -> list[DiffLine]:
    lines: list[DiffLine] = []
    for text in difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(),
                                     before_name, after_name, lineterm="", n=3):
        if text.startswith(("---", "+++")):
            kind = "head"
        elif text.startswith("@@"):
            kind = "hunk"
        elif text.startswith("+"):
            kind = "add"
        elif text.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        lines.append(DiffLine(kind, text))
        if len(lines) >= MAX_DIFF_LINES:
            lines.append(DiffLine("hunk", "… (diff cut here)"))
            break
    return lines


def _conversation(store: Store, context_id: int | None) -> list[ContextRow]:
    """The call that produced the candidate and the earlier attempts of the same proposal."""
    chain: list[ContextRow] = []
    seen: set[int] = set()
    while context_id is not None and context_id not in seen and len(chain) < 20:
        seen.add(context_id)
        try:
            context = store.contexts.get(context_id)
        except KeyError:
            break
        chain.append(context)
        context_id = context.parent_context_id
    return list(reversed(chain))


def candidate_view(store: Store, candidate_id: int, against_id: int | None = None) -> CandidateView:
    row = store.candidates.get(candidate_id)
    parent = store.candidates.find(row.parent_id) if row.parent_id is not None else None
    against = store.candidates.find(against_id) if against_id is not None else None
    contexts = _conversation(store, row.context_id)
    stages = []
    for stage, result, worker in store.evaluations.stages(candidate_id):
        stages.append(Stage(stage, worker, result.status, result.combined_score, result.public,
                            result.text_feedback, result.error, result.stdout, result.stderr,
                            result.duration_s, dict(result.extra.get("verdicts") or {}),
                            list(result.extra.get("cases") or [])))
    lineage = [a.id for a in store.lineage.ancestry(candidate_id)]
    initial = store.candidates.find(lineage[-1]) if len(lineage) > 1 else None
    targets = {f"candidate:{candidate_id}"} | {f"lineage:{i}" for i in lineage}
    history = [g for g in store.guidance.history() if g.target in targets]
    active = {t: v.text for t in sorted(targets) if (v := store.guidance.latest(t)) and v.text}
    children = [{"id": c.id, "status": str(c.status), "score": c.score, "operator": c.operator}
                for c in store.views.children_of(candidate_id)]
    return CandidateView(
        row=row,
        code_html=highlighted(row.source or "", row.language),
        parent=parent,
        parent_diff=diff_lines(parent.source, row.source, f"candidate {parent.id}",
                               f"candidate {row.id}") if parent and row.source else [],
        against=against,
        against_diff=diff_lines(against.source, row.source, f"candidate {against.id}",
                                f"candidate {row.id}") if against else [],
        context=contexts[-1] if contexts else None,
        contexts=contexts,
        stages=stages,
        children=children,
        lineage=lineage,
        guidance=[{"id": g.id, "at": g.created_at, "action": g.action, "source": g.source,
                   "target": g.target, "change": g.change_text, "active": g.text}
                  for g in history],
        targets=active,
        guidance_shortened=any(shortened_in(m.get("content", "")) for c in contexts
                               for m in c.messages),
        files=file_tree(row.source, parent.source if parent else None, row.language,
                        highlighted),
        parent_file_diffs=file_diffs(parent.source, row.source, f"candidate {parent.id}",
                                     f"candidate {row.id}", diff_lines) if parent else [],
        against_file_diffs=file_diffs(against.source, row.source, f"candidate {against.id}",
                                      f"candidate {row.id}", diff_lines) if against else [],
        initial=initial,
        initial_diff=diff_lines(initial.source, row.source, f"initial program {initial.id}",
                                f"candidate {row.id}") if initial and row.source else [],
        initial_file_diffs=file_diffs(initial.source, row.source,
                                      f"initial program {initial.id}", f"candidate {row.id}",
                                      diff_lines) if initial else [],
    )


def pygments_css() -> str:
    return str(_FORMATTER.get_style_defs(".highlight"))
