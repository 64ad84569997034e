"""Prompt co-evolution: UCB over system prompts credited from the store, LLM rewrites on a
schedule, co-evolved prompts reaching the mutation requests, and nothing lost on resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import add_candidate, sql

from cambrian.api import resume, start
from cambrian.config import PromptEvolutionConfig
from cambrian.core.objective import MAXIMIZE
from cambrian.meta.prompt_archive import REWRITE_MARKER, PromptArchive
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store


def _store_with_children(path: Path, scale: float) -> Store:
    """Initial program (score 1) and children tagged with prompts 1 and 2."""
    store = Store.open(path, create=True)
    children = [  # (prompt, status, score)
        (1, "correct", 1.0), (1, "patch_failed", None), (2, "correct", 3.0), (2, "correct", 2.0),
    ]
    with store.transaction():
        add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                            status="correct", language="python", source="x = 1")
        store.candidates.update(1, status="correct", score=1.0 * scale)
        for i, (prompt, status, score) in enumerate(children):
            cid = add_candidate(store, generation=i + 1, island=0, parent_id=1, operator="diff",
                                      status=status, language="python",
                                      source=f"x = {i + 2}" if score else None,
                                      notes={"prompt_id": prompt})
            if score is not None:
                store.candidates.update(cid, status=status, score=score * scale)
    return store


class _NoLLM:
    async def ask(self, *args, **kwargs):  # never reached by these tests
        raise AssertionError("no LLM call expected")


def test_rewards_are_normalised_by_the_score_range(tmp_path: Path):
    means = []
    for scale in (1.0, 1000.0):
        store = _store_with_children(tmp_path / f"run{scale}", scale)
        archive = PromptArchive(PromptEvolutionConfig(enabled=True), _NoLLM(), Recorder(store),
                                "scripted", "default", MAXIMIZE)
        with store.transaction():
            sql(store, "INSERT INTO system_prompts(parent_id, text, created_at) VALUES (1, 'bold', 0)")
        stats = archive.stats()
        assert (stats[1].pulls, stats[2].pulls) == (2, 2)
        # Prompt 2's children improved by 2 and 1 over the initial score 1; range is 2.
        assert stats[1].reward == 0.0 and abs(stats[2].mean - 0.75) < 1e-9
        means.append((stats[1].mean, stats[2].mean))
        store.close()
    assert means[0] == means[1]


def test_ucb_tries_untried_prompts_first_then_prefers_the_better(tmp_path: Path):
    store = _store_with_children(tmp_path / "run", 1.0)
    archive = PromptArchive(PromptEvolutionConfig(enabled=True, exploration=0.1), _NoLLM(),
                            Recorder(store), "scripted", "default", MAXIMIZE)
    with store.transaction():
        sql(store, "INSERT INTO system_prompts(parent_id, text, created_at) VALUES (1, 'bold', 0)")
        sql(store, "INSERT INTO system_prompts(parent_id, text, created_at) VALUES (1, 'calm', 0)")
    rng = np.random.default_rng(0)
    assert archive.choose(rng) == (3, "calm")
    with store.transaction():
        add_candidate(store, generation=9, island=0, parent_id=1, operator="diff",
                            status="patch_failed", language="python", notes={"prompt_id": 3})
    assert archive.choose(rng)[0] == 2
    store.close()


def test_prompts_coevolve_in_a_run_and_survive_resume(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    new_prompt = "You are a daring optimiser: change VALUE in large, decisive steps every time."

    def reply(messages, index):
        if REWRITE_MARKER in messages[-1]["content"]:
            return new_prompt
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        overrides = ["llm.models=[" + json.dumps(llm.model_config()) + "]",
                     "evolution.generations=8", "novelty.enabled=false", "meta.enabled=false",
                     "prompt_evolution.enabled=true", "prompt_evolution.mutate_every=4"]
        evolution = start(task, run_dir=tmp_path / "run", overrides=overrides)
        asyncio.run(evolution.run())
        before = evolution.hook("prompt evolution").stats()
        evolution.store.close()
        systems = [r[0]["content"] for r in llm.requests if r[0]["role"] == "system"]

        store = Store.open(tmp_path / "run")
        prompts = sql(store, "SELECT id, parent_id, text FROM system_prompts ORDER BY id").fetchall()
        tags = [r.notes.get("prompt_id") for r in store.candidates.list() if r.id != 1 and r.source]
        store.close()
        assert prompts[0][2].startswith("You are an expert python programmer")
        assert (prompts[1][1], prompts[1][2]) == (1, new_prompt)
        assert all(t in (1, 2) for t in tags) and 2 in tags
        assert any(s.startswith(new_prompt) for s in systems)

        resumed = resume(tmp_path / "run", overrides=["evolution.generations=10"])
        assert {k: (v.pulls, v.reward) for k, v in resumed.hook("prompt evolution").stats().items()} == \
            {k: (v.pulls, v.reward) for k, v in before.items()}
        asyncio.run(resumed.run())
        resumed.store.close()
