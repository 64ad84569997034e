"""What one proposal is asked to do: the parent and inspirations the selector chose, the patch
kind and mutation intent, and what every prompt carries beside them (the person's guidance,
sampled scratchpad recommendations, the co-evolved system prompt). Tags naming each of these
go into the child's notes so the trace tells what every proposal saw."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from cambrian.config import RunConfig
from cambrian.guidance import GuidanceBoard
from cambrian.mutate.prompts import ProgramView
from cambrian.mutate.proposer import ProposalRequest
from cambrian.search.algorithm import Selector
from cambrian.store.store import Store


class RequestBuilder:
    def __init__(
        self,
        config: RunConfig,
        store: Store,
        rng: np.random.Generator,
        selector: Callable[[], Selector],
        evaluated: Callable[[], int],
        *,
        guidance: GuidanceBoard,
        scratchpad: Any = None,
        mutation_schedule: Any = None,
        prompt_archive: Any = None,
    ) -> None:
        self.config = config
        self.store = store
        self.rng = rng
        self.selector = selector
        self.evaluated = evaluated
        self.guidance = guidance
        self.scratchpad = scratchpad
        self.mutation_schedule = mutation_schedule
        self.prompt_archive = prompt_archive
        self._views: dict[int, ProgramView] = {}

    # ------------------------------------------------------------------ program views

    def view(self, candidate_id: int) -> ProgramView:
        if candidate_id not in self._views:
            row = self.store.candidate(candidate_id)
            result = self.store.evaluation(candidate_id)
            error = ""
            if result is not None and not result.correct:
                error = result.error or result.stderr[-1500:]
            self._views[candidate_id] = ProgramView(
                id=row.id, source=row.source or "", score=row.score,
                correct=row.status == "correct",
                public=result.public if result else {},
                text_feedback=result.text_feedback if result else "",
                error=error,
            )
        return self._views[candidate_id]

    def forget(self, candidate_id: int) -> None:
        """Drop a cached view (the candidate's evaluation just changed)."""
        self._views.pop(candidate_id, None)

    # ------------------------------------------------------------------ requests

    def next(self, generation: int) -> ProposalRequest:
        """The parent request plus the person's guidance (first, so it survives a tight
        context) and the co-evolved system prompt."""
        request = self._parent_request(generation)
        guidance, tags = self._human_guidance()
        preamble, prompt_tags = self._system_prompt()
        return replace(request, notes=guidance + request.notes, preamble=preamble,
                       tags={**request.tags, **tags, **prompt_tags})

    def _parent_request(self, generation: int) -> ProposalRequest:
        sample = self.selector().sample(self.rng)
        if sample is None:  # no correct program yet: repair a failing one
            failed = [r for r in self.store.candidates("incorrect") if r.source]
            parent = failed[int(self.rng.integers(len(failed)))]
            island = int(self.rng.integers(self.config.database.num_islands))
            return ProposalRequest(generation, island, "fix", self.view(parent.id))
        inspiration_ids = list(sample.inspiration_ids)
        kind, intent = ((sample.kind, None) if sample.kind
                        else self.choose_kind(bool(inspiration_ids)))
        if kind == "cross" and len(inspiration_ids) > 1:
            inspiration_ids = [inspiration_ids[int(self.rng.integers(len(inspiration_ids)))]]
        notes = ((sample.guidance,) if sample.guidance else ()) + self._sample_recommendations()
        return ProposalRequest(
            generation, sample.island, kind, self.view(sample.parent_id),
            tuple(self.view(i) for i in inspiration_ids), notes,
            tags={"intent": intent} if intent else {},
        )

    def choose_kind(self, has_inspirations: bool) -> tuple[str, str | None]:
        """(patch kind, mutation intent); the intent is None when the schedule is off."""
        if self.mutation_schedule is not None:
            intent = self.mutation_schedule.choose(self.rng, self.evaluated(), has_inspirations)
            if intent is not None:
                return intent.kind, intent.name
        evo = self.config.evolution
        kinds = list(evo.patch_types)
        probs = np.array(evo.patch_type_probs, dtype=float)
        if not has_inspirations and "cross" in kinds:
            probs[kinds.index("cross")] = 0.0
        if probs.sum() <= 0:
            return ("diff" if "diff" in kinds else "full"), None
        return kinds[int(self.rng.choice(len(kinds), p=probs / probs.sum()))], None

    def _human_guidance(self) -> tuple[tuple[str, ...], dict[str, Any]]:
        version = self.guidance.sync_file()
        if not version.id:
            return (), {}
        notes = ((f"Guidance from the person running this search: {version.text}",)
                 if version.text else ())
        return notes, {"guidance_id": version.id}

    def _system_prompt(self) -> tuple[str | None, dict[str, Any]]:
        if self.prompt_archive is None:
            return None, {}
        prompt_id, text = self.prompt_archive.choose(self.rng)
        return text, {"prompt_id": prompt_id}

    def _sample_recommendations(self) -> tuple[str, ...]:
        if self.scratchpad is None:
            return ()
        pool = self.scratchpad.recommendations()
        take = min(self.config.meta.per_prompt, len(pool))
        picks = self.rng.choice(len(pool), size=take, replace=False) if take else []
        return tuple(pool[int(i)] for i in sorted(picks))
