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
import time
from dataclasses import dataclass

import numpy as np

from cambrian.config import ConfigError, PromptEvolutionConfig
from cambrian.llm.bandit import reward_improvement
from cambrian.search.hooks import Assistant
from cambrian.store.store import Store

DDL = """
CREATE TABLE IF NOT EXISTS system_prompts (
    id INTEGER PRIMARY KEY,
    parent_id INTEGER,
    text TEXT NOT NULL,
    created_at REAL NOT NULL,
    evaluated INTEGER NOT NULL DEFAULT 0,
    context_id INTEGER,
    retired INTEGER NOT NULL DEFAULT 0
);
"""

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


class PromptArchive:
    def __init__(self, config: PromptEvolutionConfig, store: Store, assistant: Assistant,
                 default_text: str, maximize: bool) -> None:
        self.config = config
        self.store = store
        self.assistant = assistant
        self.maximize = maximize
        store.execute(DDL)
        if store.execute("SELECT COUNT(*) FROM system_prompts").fetchone()[0] == 0:
            with store.transaction():
                store.execute("INSERT INTO system_prompts(parent_id, text, created_at) "
                              "VALUES (NULL, ?, ?)", (default_text, time.time()))

    # ------------------------------------------------------------------ statistics

    def _fitness(self, score: float | None) -> float | None:
        return None if score is None else (score if self.maximize else -score)

    def stats(self) -> dict[int, PromptStats]:
        """Active prompts with their pulls and summed normalised rewards, from the store."""
        prompts = {int(i): PromptStats(int(i), text) for i, text in self.store.execute(
            "SELECT id, text FROM system_prompts WHERE retired=0 ORDER BY id")}
        rows = self.store.execute(
            "SELECT c.id, json_extract(c.notes_json, '$.prompt_id'), c.status, c.score, "
            "p.score FROM candidates c LEFT JOIN candidates p ON p.id = c.parent_id "
            "WHERE json_extract(c.notes_json, '$.prompt_id') IS NOT NULL "
            "AND c.status NOT IN ('pending', 'duplicate')").fetchall()
        initial = self.store.execute("SELECT score FROM candidates WHERE id=1").fetchone()
        initial_fitness = self._fitness(initial[0]) if initial else None
        correct = [f for (s,) in self.store.execute(
            "SELECT score FROM candidates WHERE status='correct' AND score IS NOT NULL")
            if (f := self._fitness(s)) is not None]
        spread = (max(correct) - min(correct)) if len(correct) > 1 else 0.0
        scale = spread if spread > 0 else 1.0
        for _, prompt_id, status, score, parent_score in rows:
            entry = prompts.get(int(prompt_id))
            if entry is None:
                continue
            entry.pulls += 1
            if status == "correct":
                gain = reward_improvement(self._fitness(score), self._fitness(parent_score),
                                          initial_fitness)
                entry.reward += min(gain / scale, 1.0)
        return prompts

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
        last = self.store.execute("SELECT MAX(evaluated) FROM system_prompts").fetchone()[0] or 0
        return evaluated - int(last) >= self.config.mutate_every

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
        reply = await self.assistant.ask("prompt_evolution", self._prompt(parent, problem),
                                         max_tokens=self.config.max_tokens, temperature=0.8)
        text = _clean_reply(reply or "")
        with self.store.transaction():
            # The marker row is written even for an unusable reply, so the next attempt waits
            # another ``mutate_every`` evaluations instead of retrying at once.
            if len(text) < 20 or text in {s.text for s in stats.values()}:
                self.store.execute("UPDATE system_prompts SET evaluated=MAX(evaluated, ?) "
                                   "WHERE id=?", (evaluated, parent.id))
                return None
            cursor = self.store.execute(
                "INSERT INTO system_prompts(parent_id, text, created_at, evaluated) "
                "VALUES (?,?,?,?)", (parent.id, text, time.time(), evaluated))
            self._retire_weakest(parent.id)
        return int(cursor.lastrowid)

    def _retire_weakest(self, keep: int) -> None:
        stats = self.stats()
        if len(stats) <= self.config.max_prompts:
            return
        candidates = [s for s in stats.values()
                      if s.pulls >= self.config.min_pulls_to_retire and s.id != keep]
        if candidates:
            weakest = min(candidates, key=lambda s: (s.mean, s.id))
            self.store.execute("UPDATE system_prompts SET retired=1 WHERE id=?", (weakest.id,))


def _clean_reply(text: str) -> str:
    text = re.sub(r"^```[a-z]*\n|\n```$", "", text.strip())
    text = re.sub(r"^(new )?system prompt:\s*", "", text, flags=re.I)
    return text.strip()[:1500]


def build_prompt_archive(config: object, store: Store, assistant: Assistant, default_text: str,
                         maximize: bool) -> PromptArchive | None:
    settings = config.prompt_evolution  # type: ignore[attr-defined]
    if not settings.enabled:
        return None
    labels = [m.label for m in config.llm.models]  # type: ignore[attr-defined]
    if settings.model is not None and settings.model not in labels:
        raise ConfigError(f"prompt_evolution.model '{settings.model}' is not one of llm.models: "
                          f"{labels}")
    return PromptArchive(settings, store, assistant, default_text, maximize)
