"""The meta-scratchpad (seed 000 §3.3): every ``interval`` evaluations an LLM reads what the recent
programs tried and how they scored, updates a scratchpad of what worked and what did not, and
writes up to ``max_recommendations`` recommendations that later mutation prompts receive.

Each update is stored (table ``meta_notes``) and written as ``RUN_DIR/meta/meta_<n>.md`` so a user
can read what the run learned and when.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cambrian.config import MetaConfig, RunConfig
from cambrian.core.events import Event
from cambrian.core.hooks import LoopHook, StepFailed
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.llm.base import GenerationParams, LLMRequest, Message
from cambrian.llm.gateway import LLMGateway
from cambrian.store.recorder import Recorder
from cambrian.store.rows import CandidateRow, MetaNoteRow

SECTIONS = ("WORKED:", "DID NOT WORK:", "RECOMMENDATIONS:")


def scratchpad_grammar(max_recommendations: int) -> str:
    return "\n".join([
        f'root ::= "WORKED:\\n" item{{1,4}} "DID NOT WORK:\\n" item{{1,4}} '
        f'"RECOMMENDATIONS:\\n" rec{{1,{max_recommendations}}}',
        'item ::= "- " [^\\n]{1,160} "\\n"',
        'rec ::= [1-9] ". " [^\\n]{1,200} "\\n"',
    ])


def parse_scratchpad(text: str, limit: int) -> tuple[str, list[str]]:
    """(scratchpad text before RECOMMENDATIONS, the numbered or bulleted recommendations)."""
    head, _, tail = text.partition("RECOMMENDATIONS:")
    recommendations = []
    for line in tail.splitlines():
        match = re.match(r"\s*(?:\d+[.)]|[-*])\s+(.*\S)", line)
        if match:
            recommendations.append(match.group(1))
    return head.strip(), recommendations[:limit]


class MetaScratchpad(LoopHook):
    """A loop hook: a side step every ``interval`` evaluations, and recommendations sampled
    into every mutation prompt."""

    name = "meta-scratchpad"
    blocks_proposals = True  # the next prompts should see its recommendations

    def __init__(self, config: MetaConfig, gateway: LLMGateway, recorder: Recorder,
                 model_label: str, run_dir: Path, objective: Objective) -> None:
        self.config = config
        self.gateway = gateway
        self.recorder = recorder
        self.store = recorder.store
        self.model_label = model_label
        self.run_dir = run_dir
        self.objective = objective
        self.latest: MetaNoteRow | None = self.store.meta_notes.latest()
        self.last_problem = ""  # why the last update stored no note

    def due(self, evaluated: int) -> bool:
        done = self.latest.evaluated if self.latest else 0
        return evaluated - done >= self.config.interval

    def recommendations(self) -> list[str]:
        return list(self.latest.recommendations) if self.latest else []

    def prompt_notes(self, rng: Any) -> tuple[str, ...]:
        """``meta.per_prompt`` recommendations, drawn at random."""
        pool = self.recommendations()
        take = min(self.config.per_prompt, len(pool))
        picks = rng.choice(len(pool), size=take, replace=False) if take else []
        return tuple(pool[int(i)] for i in sorted(picks))

    def _describe(self, row: CandidateRow, scores: dict[int, float | None]) -> str:
        what = row.description or row.operator
        if row.status is CandidateStatus.SCREENED:  # tiered judging: stopped at the quick stage
            return (f"- program {row.id} ({row.operator}, \"{what}\"): clearly worse than the "
                    "best on the first test cases, so not evaluated further")
        if row.status is not CandidateStatus.CORRECT or row.score is None:
            return f"- program {row.id} ({row.operator}, \"{what}\"): FAILED: {row.error[:160]}"
        parent = scores.get(row.parent_id) if row.parent_id else None
        delta = "" if parent is None else f" ({row.score - parent:+.4g} vs its parent)"
        return f"- program {row.id} ({row.operator}, \"{what}\"): score {row.score:.6g}{delta}"

    def _prompt(self, recent: list[CandidateRow], scores: dict[int, float | None],
                best: float | None) -> str:
        previous = self.latest.scratchpad if self.latest else "(empty)"
        return (
            f"You review an evolutionary search that improves a program "
            f"({self.objective.better_word} score is better; best so far: {best}).\n\n"
            "## Recent attempts\n"
            + "\n".join(self._describe(r, scores) for r in recent)
            + f"\n\n## Your notes so far\n{previous}\n\n"
            "Update the notes. Reply in exactly this format:\n"
            "WORKED:\n- (a change that improved the score)\nDID NOT WORK:\n- (a change that failed "
            f"or made it worse)\nRECOMMENDATIONS:\n1. (a concrete next change to try)\n"
            f"Give at most {self.config.max_recommendations} recommendations, one line each."
        )

    async def step(self, evaluated: int) -> list[Event]:
        """An update; one that got no recommendations (failed call, unusable reply) fails, so
        the loop backs off before the next try."""
        if await self.update(evaluated) is None:
            raise StepFailed(self.last_problem or "no recommendations")
        return []

    async def update(self, evaluated: int) -> MetaNoteRow | None:
        """The new note, or None (``last_problem`` says why)."""
        self.last_problem = ""
        recent = self.store.candidates.recent_evaluated(self.config.interval, exclude_id=1)
        if not recent:
            self.last_problem = "no evaluated child yet"
            return None
        parents = self.store.candidates.by_ids({r.parent_id for r in recent if r.parent_id})
        scores = {i: row.score for i, row in parents.items()
                  if row.status is CandidateStatus.CORRECT}
        best_row = self.store.candidates.best(self.objective)
        best = best_row.score if best_row is not None else None
        request = LLMRequest(
            (Message("user", self._prompt(recent, scores, best)),),
            GenerationParams(temperature=0.3, max_tokens=self.config.max_tokens,
                             grammar=scratchpad_grammar(self.config.max_recommendations)))
        call = await self.gateway.call("meta", self.model_label, request)
        if call.response is None:
            self.last_problem = call.skipped or call.error or "the call failed"
            return None
        scratchpad, recommendations = parse_scratchpad(call.response.text,
                                                       self.config.max_recommendations)
        if not recommendations:
            self.last_problem = "the reply held no recommendations"
            return None
        with self.recorder.transaction():
            self.store.meta_notes.add(evaluated, scratchpad, recommendations, call.context_id)
        self.latest = MetaNoteRow(evaluated, scratchpad, recommendations, call.context_id)
        self._write_file(self.latest)
        return self.latest

    def _write_file(self, note: MetaNoteRow) -> None:
        folder = self.run_dir / "meta"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"# Meta notes after {note.evaluated} evaluations", "", note.scratchpad, "",
                 "RECOMMENDATIONS:"] + [f"{i}. {r}" for i, r in enumerate(note.recommendations, 1)]
        (folder / f"meta_{note.evaluated}.md").write_text("\n".join(lines) + "\n")


def build_scratchpad(config: RunConfig, gateway: LLMGateway, recorder: Recorder, run_dir: Path,
                     objective: Objective) -> MetaScratchpad | None:
    if not config.meta.enabled:
        return None
    label = gateway.label(config.meta.model, "meta.model")
    return MetaScratchpad(config.meta, gateway, recorder, label, run_dir, objective)
