"""Novelty rejection: the similarity index, the bundled embedder, the judge, and real runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql

from cambrian.api import resume, start
from cambrian.config import ConfigError, RunConfig, build_config
from cambrian.llm.embeddings import LocalEmbedder, OpenAIEmbedder, chunk_lines
from cambrian.llm.factory import build_providers
from cambrian.llm.gateway import LLMGateway
from cambrian.search.novelty import SimilarityIndex, build_novelty_filter, resolved_threshold
from cambrian.search.novelty_judge import JUDGE_QUESTION
from cambrian.store.store import Store

CIRCLES = Path(__file__).resolve().parents[2] / "examples" / "circle_packing" / "initial.py"


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_index_finds_the_nearest_program_of_the_same_island_only():
    index = SimilarityIndex()
    for i in range(40):  # grows past its initial capacity
        index.add(0, i, unit(1.0, i / 40, 0.0))
    index.add(1, 99, unit(0.0, 0.0, 1.0))
    similarity, nearest = index.nearest(0, unit(1.0, 0.0, 0.0))
    assert nearest == 0 and similarity == pytest.approx(1.0)
    assert index.nearest(1, unit(1.0, 0.0, 0.0)) == (pytest.approx(0.0), 99)
    assert index.nearest(2, unit(1.0, 0.0, 0.0)) is None
    assert len(index) == 41


def test_bundled_embedder_ranks_near_copies_above_rewrites():
    embedder = LocalEmbedder.shared()
    source = CIRCLES.read_text()
    tweaked = source.replace("0.5 + 0.3 * np.cos", "0.5 + 0.32 * np.cos")
    rewrite = "def construct_packing():\n    import random\n    return [random.random() for _ in range(26)]\n"
    vectors = asyncio.run(embedder.embed([source, source, tweaked, rewrite]))
    assert vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] == pytest.approx(1.0, abs=1e-5)
    assert vectors[0] @ vectors[2] > 0.95 > vectors[0] @ vectors[3]
    assert len(chunk_lines(source)) > 1  # longer than the model's window: chunked, not cut


def novelty_run(tmp_path: Path, llm: ScriptedLLM, *sets: str, sleep: float = 0.0) -> Store:
    task = write_counter_task(tmp_path / "task", sleep=sleep)
    evolution = start(task, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=3",
        "database.num_islands=1", *sets,
    ])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    return Store.open(tmp_path / "run")


def test_too_similar_proposals_are_rejected_stored_and_resampled(tmp_path: Path):
    with ScriptedLLM(incrementing) as llm:
        store = novelty_run(tmp_path, llm, "novelty.threshold=0.5", "novelty.max_attempts=2",
                            "novelty.judge=false")
    rejected = store.candidates.list("rejected")
    assert rejected, "VALUE = 2 is a near copy of VALUE = 1 under a 0.5 threshold"
    for row in rejected:
        assert row.source and row.error.startswith("too similar to program")
        assert row.notes["similarity"] > 0.5
    # After max_attempts rejections a generation accepts its proposal: the budget is still met.
    assert store.candidates.count("correct", "incorrect") == 4
    per_generation = {}
    for row in rejected:
        per_generation[row.generation] = per_generation.get(row.generation, 0) + 1
    assert max(per_generation.values()) <= 2
    assert sql(store, "SELECT COUNT(*) FROM embeddings").fetchone()[0] == 4  # accepted only


def test_the_judge_and_threshold_defaults_follow_the_judge_model():
    assert RunConfig().novelty.judge == "auto" and RunConfig().novelty.threshold == "auto"
    assert RunConfig.model_validate({"novelty": {"judge": False}}).novelty.judge is False
    auto = RunConfig().novelty
    assert resolved_threshold(auto, has_judge=True) == 0.95  # seed 000 Appendix B
    assert resolved_threshold(auto, has_judge=False) == 0.999  # near-copies only
    assert resolved_threshold(RunConfig.model_validate(
        {"novelty": {"threshold": 0.9}}).novelty, has_judge=False) == 0.9
    with pytest.raises(ConfigError, match="novelty.threshold"):
        build_config([{"novelty": {"threshold": 1.5}}])


def test_auto_judge_asks_remote_models_only(tmp_path: Path):
    remote = RunConfig.model_validate({"llm": {"models": [
        {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}]}})
    local = RunConfig()
    for config, wants_judge in ((remote, True), (local, False)):
        gateway = LLMGateway(config.llm.models, build_providers(config.llm), None)  # type: ignore[arg-type]
        novelty = build_novelty_filter(config, SimpleNamespace(store=None), gateway)  # type: ignore[arg-type]
        assert novelty is not None and (novelty.judge_label is not None) is wants_judge
        assert novelty.threshold == (0.95 if wants_judge else 0.999)


def test_novelty_judge_can_overrule_the_embedding(tmp_path: Path):
    verdicts = []

    def reply(messages, index):
        if JUDGE_QUESTION in messages[-1]["content"]:
            verdicts.append("SAME" if len(verdicts) % 2 == 0 else "DIFFERENT")
            return verdicts[-1]
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        store = novelty_run(tmp_path, llm, "novelty.threshold=0.5",  # the judge is on by default
                            "novelty.judge_when=always")  # whatever the evaluation costs
    judged = sql(store, "SELECT response_text FROM contexts WHERE purpose='novelty'").fetchall()
    assert {r[0] for r in judged} == {"SAME", "DIFFERENT"}
    rejected = store.candidates.list("rejected")
    assert rejected and all("novelty judge found no meaningful difference" in r.error
                            for r in rejected)
    assert all(r.notes["judge_context"] for r in rejected)
    accepted = [r for r in store.candidates.list("correct", "incorrect") if r.id != 1]
    assert any(r.notes["similarity"] > 0.5 for r in accepted)  # let through by the judge


def test_api_embeddings_over_the_openai_protocol(tmp_path: Path):
    with ScriptedLLM(incrementing) as llm:
        embedder = OpenAIEmbedder("embed-test", base_url=llm.base_url)
        vectors = asyncio.run(embedder.embed(["alpha beta", "alpha beta", "gamma"]))
        assert vectors[0] @ vectors[1] == pytest.approx(1.0)
        assert vectors[0] @ vectors[2] < 0.5
        store = novelty_run(tmp_path, llm, "novelty.embedding=openai",
                            f"novelty.base_url={llm.base_url}", "novelty.embedding_model=embed-test")
    models = {r[0] for r in sql(store, "SELECT model FROM embeddings")}
    assert models == {"embed-test"}


def test_the_index_is_rebuilt_on_resume(tmp_path: Path):
    with ScriptedLLM(incrementing) as llm:
        store = novelty_run(tmp_path, llm)
        stored = sql(store, "SELECT COUNT(*) FROM embeddings").fetchone()[0]
        store.close()
        # The session's end wrote the index's files with the resume snapshot; the resume
        # maps them instead of reading every embedding.
        assert (tmp_path / "run" / "novelty_index" / "header.json").exists()
        evolution = resume(tmp_path / "run")
        evolution.restore()
        assert len(evolution.hook("novelty").filter.index) == stored
        assert evolution.hook("novelty").filter.loaded_rows == stored
        evolution.store.close()
