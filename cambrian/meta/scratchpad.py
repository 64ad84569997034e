"""The meta-scratchpad (seed 000 §3.3): every ``interval`` evaluations an LLM reads what the recent
programs tried and how they scored, updates a scratchpad of what worked and what did not, and
writes up to ``max_recommendations`` recommendations that later mutation prompts receive.

Each update is stored (table ``meta_notes``) and written as ``RUN_DIR/meta/meta_<n>.md`` so a user
can read what the run learned and when.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.config import ConfigError, MetaConfig
from cambrian.llm.base import GenerationParams, LLMError, LLMProvider, LLMRequest, Message
from cambrian.search.hooks import skipped_for_budget
from cambrian.store.store import EVALUATED_STATUSES, CandidateRow, Store

SECTIONS = ("WORKED:", "DID NOT WORK:", "RECOMMENDATIONS:")


def scratchpad_grammar(max_recommendations: int) -> str:
    return "\n".join([
        f'root ::= "WORKED:\\n" item{{1,4}} "DID NOT WORK:\\n" item{{1,4}} '
        f'"RECOMMENDATIONS:\\n" rec{{1,{max_recommendations}}}',
        'item ::= "- " [^\\n]{1,160} "\\n"',
        'rec ::= [1-9] ". " [^\\n]{1,200} "\\n"',
    ])


@dataclass(frozen=True)
class MetaNote:
    evaluated: int
    scratchpad: str
    recommendations: list[str]


def parse_scratchpad(text: str, limit: int) -> tuple[str, list[str]]:
    """(scratchpad text before RECOMMENDATIONS, the numbered or bulleted recommendations)."""
    head, _, tail = text.partition("RECOMMENDATIONS:")
    recommendations = []
    for line in tail.splitlines():
        match = re.match(r"\s*(?:\d+[.)]|[-*])\s+(.*\S)", line)
        if match:
            recommendations.append(match.group(1))
    return head.strip(), recommendations[:limit]


class MetaScratchpad:
    def __init__(
        self,
        config: MetaConfig,
        store: Store,
        provider: LLMProvider,
        model_label: str,
        is_local: bool,
        run_dir: Path,
        maximize: bool,
        budget_check: Callable[[], str | None] | None = None,
    ) -> None:
        self.config = config
        self.budget_check = budget_check  # no update starts once a budget cap is reached
        self.store = store
        self.provider = provider
        self.model_label = model_label
        self.is_local = is_local
        self.run_dir = run_dir
        self.maximize = maximize
        self.latest: MetaNote | None = store.latest_meta_note()

    def due(self, evaluated: int) -> bool:
        done = self.latest.evaluated if self.latest else 0
        return evaluated - done >= self.config.interval

    def recommendations(self) -> list[str]:
        return list(self.latest.recommendations) if self.latest else []

    def _describe(self, row: CandidateRow, scores: dict[int, float | None]) -> str:
        what = row.description or row.operator
        if row.status == "screened":  # tiered judging: stopped at the quick stage
            return (f"- program {row.id} ({row.operator}, \"{what}\"): clearly worse than the "
                    "best on the first test cases, so not evaluated further")
        if row.status != "correct" or row.score is None:
            return f"- program {row.id} ({row.operator}, \"{what}\"): FAILED: {row.error[:160]}"
        parent = scores.get(row.parent_id) if row.parent_id else None
        delta = "" if parent is None else f" ({row.score - parent:+.4g} vs its parent)"
        return f"- program {row.id} ({row.operator}, \"{what}\"): score {row.score:.6g}{delta}"

    def _prompt(self, recent: list[CandidateRow], scores: dict[int, float | None]) -> str:
        better = "higher" if self.maximize else "lower"
        previous = self.latest.scratchpad if self.latest else "(empty)"
        best = max((s for s in scores.values() if s is not None), default=None) if self.maximize \
            else min((s for s in scores.values() if s is not None), default=None)
        return (
            f"You review an evolutionary search that improves a program ({better} score is better; "
            f"best so far: {best}).\n\n## Recent attempts\n"
            + "\n".join(self._describe(r, scores) for r in recent)
            + f"\n\n## Your notes so far\n{previous}\n\n"
            "Update the notes. Reply in exactly this format:\n"
            "WORKED:\n- (a change that improved the score)\nDID NOT WORK:\n- (a change that failed "
            f"or made it worse)\nRECOMMENDATIONS:\n1. (a concrete next change to try)\n"
            f"Give at most {self.config.max_recommendations} recommendations, one line each."
        )

    async def update(self, evaluated: int) -> MetaNote | None:
        rows = [r for r in self.store.candidates(*EVALUATED_STATUSES) if r.id != 1]
        recent = rows[-self.config.interval:]
        if not recent or skipped_for_budget(self.store, self.budget_check, "meta"):
            return None
        scores = {r.id: r.score for r in self.store.candidates("correct")}
        request = LLMRequest(
            (Message("user", self._prompt(recent, scores)),),
            GenerationParams(
                temperature=0.3, max_tokens=self.config.max_tokens,
                grammar=scratchpad_grammar(self.config.max_recommendations) if self.is_local else None,
            ),
        )
        try:
            response = await self.provider.complete(request)
        except LLMError as exc:
            self.store.add_context(purpose="meta", model=self.model_label, provider="", request=request,
                                   response=None, error=str(exc))
            return None
        scratchpad, recommendations = parse_scratchpad(response.text, self.config.max_recommendations)
        with self.store.transaction():
            context_id = self.store.add_context(purpose="meta", model=self.model_label, provider="",
                                                request=request, response=response)
            if recommendations:
                self.store.add_meta_note(evaluated, scratchpad, recommendations, context_id)
        if not recommendations:
            return None
        self.latest = MetaNote(evaluated, scratchpad, recommendations)
        self._write_file(self.latest)
        return self.latest

    def _write_file(self, note: MetaNote) -> None:
        folder = self.run_dir / "meta"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"# Meta notes after {note.evaluated} evaluations", "", note.scratchpad, "",
                 "RECOMMENDATIONS:"] + [f"{i}. {r}" for i, r in enumerate(note.recommendations, 1)]
        (folder / f"meta_{note.evaluated}.md").write_text("\n".join(lines) + "\n")


def build_scratchpad(config: Any, store: Store, ensemble: Any, run_dir: Path, maximize: bool,
                     budget_check: Callable[[], str | None] | None = None) -> MetaScratchpad | None:
    if not config.meta.enabled:
        return None
    models = {m.label: m for m in config.llm.models}
    label = config.meta.model or config.llm.models[0].label
    if label not in models:
        raise ConfigError(f"meta.model '{label}' is not one of llm.models: {sorted(models)}")
    return MetaScratchpad(config.meta, store, ensemble.providers[label], label,
                          models[label].provider == "local", run_dir, maximize, budget_check)
