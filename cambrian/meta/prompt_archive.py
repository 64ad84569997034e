"""Prompt co-evolution (seed 002 §10.8): the system prompt's role text evolves beside the programs.

The archive starts with the default role text. Each proposal draws one prompt by UCB1; the
prompt is credited with the improvement of the program it produced over max(parent, initial),
normalised by the run's observed score range so the statistics do not depend on the task's
scale; a proposal that produced no evaluable program counts as a pull with reward 0. Every
``mutate_every`` evaluations an LLM rewrites the best prompt so far into a new archive member;
beyond ``max_prompts`` the weakest sufficiently-tried prompt retires.

Statistics are never kept only in memory: they are recomputed from the candidates' notes
(``prompt_id``), so a resumed run continues with exactly the same archive.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from cambrian.config import PromptEvolutionConfig, RunConfig
from cambrian.core.events import Event
from cambrian.core.hooks import LoopHook, StepFailed
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.llm.bandit import reward_improvement
from cambrian.llm.gateway import LLMGateway
from cambrian.store.recorder import Recorder

REWRITE_MARKER = "Rewrite this system prompt"


@dataclass
class PromptStats:
    id: int
    text: str
    pulls: int = 0
    reward: float = 0.0  # sum of normalised rewards

    @property
    def mean(self) -> float:
        return self.reward / self.pulls if self.pulls else 0.0


class PromptArchive(LoopHook):
    """A loop hook: the system prompt of every proposal, and a rewrite every ``mutate_every``
    evaluations (a side step that does not hold proposals back)."""

    name = "prompt evolution"
    blocks_proposals = False

    def __init__(self, config: PromptEvolutionConfig, gateway: LLMGateway, recorder: Recorder,
                 model_label: str, default_text: str, objective: Objective,
                 problem: str = "") -> None:
        self.config = config
        self.gateway = gateway
        self.recorder = recorder
        self.store = recorder.store
        self.model_label = model_label
        self.objective = objective
        self.problem = problem
        if self.store.prompts.count() == 0:
            with recorder.transaction():
                self.store.prompts.add(default_text)

    # ------------------------------------------------------------------ statistics

    def stats(self) -> dict[int, PromptStats]:
        """Active prompts with their pulls and summed normalised rewards, from the store."""
        fitness = self.objective.fitness
        prompts = {p.id: PromptStats(p.id, p.text) for p in self.store.prompts.list()}
        initial = self.store.candidates.find(1)
        initial_fitness = fitness(initial.score) if initial else None
        correct = [f for s in self.store.candidates.scores(CandidateStatus.CORRECT).values()
                   if (f := fitness(s)) is not None]
        spread = (max(correct) - min(correct)) if len(correct) > 1 else 0.0
        scale = spread if spread > 0 else 1.0
        for pull in self.store.candidates.prompt_pulls():
            entry = prompts.get(pull.prompt_id)
            if entry is None:
                continue
            entry.pulls += 1
            if pull.status is CandidateStatus.CORRECT:
                gain = reward_improvement(fitness(pull.score), fitness(pull.parent_score),
                                          initial_fitness)
                entry.reward += min(gain / scale, 1.0)
        return prompts

    def system_prompt(self, rng: Any) -> tuple[str, dict[str, Any]]:
        prompt_id, text = self.choose(rng)
        return text, {"prompt_id": prompt_id}

    def choose(self, rng: np.random.Generator) -> tuple[int, str]:
        """UCB1 (seed 000 §3.3's rule, applied to prompts): untried prompts first."""
        stats = list(self.stats().values())
        untried = [s for s in stats if s.pulls == 0]
        if untried:
            pick = untried[0]
            return pick.id, pick.text
        total = sum(s.pulls for s in stats)
        values = np.array([s.mean + self.config.exploration * math.sqrt(2 * math.log(total) / s.pulls)
                           for s in stats])
        best = np.flatnonzero(values >= values.max() - 1e-12)
        pick = stats[int(best[int(rng.integers(len(best)))])]
        return pick.id, pick.text

    # ------------------------------------------------------------------ mutation

    def due(self, evaluated: int) -> bool:
        return evaluated - self.store.prompts.last_rewrite_at() >= self.config.mutate_every

    async def step(self, evaluated: int) -> list[Event]:
        if await self.mutate(evaluated, self.problem) is None:
            raise StepFailed("the rewrite was unusable (failed call, too short, or a copy)")
        return []

    def _prompt(self, parent: PromptStats, problem: str) -> str:
        return (
            f"{REWRITE_MARKER} for a coding assistant that improves a program step by step. "
            f"Used {parent.pulls} times, it led to an improvement in "
            f"{100 * parent.mean:.0f}% of the score range on average.\n\n"
            f"## Current system prompt\n{parent.text}\n\n"
            + (f"## The problem\n{problem[:1500]}\n\n" if problem else "")
            + "Write a better system prompt: who the assistant is, what it should pay attention "
            "to, and how bold its changes should be. At most 120 words. Reply with the new "
            "prompt only."
        )

    async def mutate(self, evaluated: int, problem: str = "") -> int | None:
        """Add an LLM rewrite of the best prompt; return its id (None if the reply was unusable)."""
        stats = self.stats()
        tried = [s for s in stats.values() if s.pulls]
        parent = max(tried or list(stats.values()), key=lambda s: (s.mean, -s.id))
        call = await self.gateway.ask("prompt_evolution", self._prompt(parent, problem),
                                      label=self.model_label, max_tokens=self.config.max_tokens,
                                      temperature=0.8)
        text = _clean_reply(call.text or "")
        with self.recorder.transaction():
            # The marker is written even for an unusable reply, so the next attempt waits
            # another ``mutate_every`` evaluations instead of retrying at once.
            if len(text) < 20 or text in {s.text for s in stats.values()}:
                self.store.prompts.mark_rewrite(parent.id, evaluated)
                return None
            prompt_id = self.store.prompts.add(text, parent.id, evaluated, call.context_id)
            self._retire_weakest(parent.id)
        return prompt_id

    def _retire_weakest(self, keep: int) -> None:
        stats = self.stats()
        if len(stats) <= self.config.max_prompts:
            return
        candidates = [s for s in stats.values()
                      if s.pulls >= self.config.min_pulls_to_retire and s.id != keep]
        if candidates:
            weakest = min(candidates, key=lambda s: (s.mean, s.id))
            self.store.prompts.retire(weakest.id)


def _clean_reply(text: str) -> str:
    text = re.sub(r"^```[a-z]*\n|\n```$", "", text.strip())
    text = re.sub(r"^(new )?system prompt:\s*", "", text, flags=re.IGNORECASE)
    return text.strip()[:1500]


def build_prompt_archive(config: RunConfig, gateway: LLMGateway, recorder: Recorder,
                         default_text: str, objective: Objective,
                         problem: str = "") -> PromptArchive | None:
    settings = config.prompt_evolution
    if not settings.enabled:
        return None
    label = gateway.label(settings.model, "prompt_evolution.model")
    return PromptArchive(settings, gateway, recorder, label, default_text, objective, problem)
