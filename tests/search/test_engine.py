"""End-to-end runs of the evolution loop: real store, real sandboxed evaluator, the real
OpenAI-compatible provider over HTTP; only the model's replies are scripted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, current_value, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import RunExists, resume, start
from cambrian.search.engine import RunAborted
from cambrian.store.store import Store


def overrides(llm: ScriptedLLM, generations: int, **extra: str) -> list[str]:
    sets = [
        f"evolution.generations={generations}",
        "llm.models=[" + json.dumps(llm.model_config()) + "]",
        "evolution.max_parallel_evaluations=2",
        "database.num_islands=2",
        "database.migration_interval=3",
        "novelty.enabled=false",  # exercised in test_novelty.py
    ]
    return sets + [f"{k.replace('__', '.')}={v}" for k, v in extra.items()]


def run(task: Path, run_dir: Path, sets: list[str]):
    evolution = start(task, overrides=sets, run_dir=run_dir)
    try:
        return asyncio.run(evolution.run()), Store.open(run_dir)
    finally:
        evolution.store.close()


@pytest.mark.parametrize("contract", ["module", "command"])
def test_run_improves_and_records_everything(tmp_path: Path, contract: str):
    task = write_counter_task(tmp_path / "task", contract=contract)
    with ScriptedLLM(incrementing) as llm:
        summary, store = run(task, tmp_path / "run", overrides(llm, 8))
    assert summary.initial_score == 1.0
    assert summary.best_score is not None and summary.best_score > 1.0
    assert summary.evaluations == 8
    statuses = {r.status for r in store.candidates.list()}
    assert statuses <= {"correct", "incorrect", "duplicate", "patch_failed"}
    assert store.candidates.count("pending") == 0
    # Every child has its parent edge and the LLM call that produced it.
    for row in store.candidates.list("correct", "incorrect"):
        if row.id == 1:
            continue
        edges = sql(store, "SELECT kind FROM edges WHERE child_id=?", (row.id,)).fetchall()
        assert ("parent",) in edges
        context = sql(store, "SELECT response_text FROM contexts WHERE id=(SELECT context_id "
                                "FROM candidates WHERE id=?)", (row.id,)).fetchone()
        assert context and "VALUE" in context[0]
    # Private metrics were stored but never shown to the model.
    assert "PRIVATE-MARKER" in json.dumps(store.evaluations.latest(1).private)
    prompts = " ".join(r[0] for r in sql(store, "SELECT messages_json FROM contexts"))
    assert "PRIVATE-MARKER" not in prompts
    assert "value is" in prompts  # public feedback does reach the prompt
    best_file = tmp_path / "run" / "best" / "program.py"
    assert f"VALUE = {int(summary.best_score)}" in best_file.read_text()
    ledger = store.contexts.ledger()
    assert ledger[0].calls == store.contexts.count() and ledger[0].prompt_tokens > 0


def test_minimisation(tmp_path: Path):
    initial = "# EVOLVE-BLOCK-START\nVALUE = 50\n# EVOLVE-BLOCK-END\n\ndef run():\n    return VALUE\n"
    task = write_counter_task(tmp_path / "task", initial=initial,
                              config="task:\n  direction: minimize\n")

    def decrementing(messages, index):
        return f"Lower\n```python\nVALUE = {current_value(messages) - 1}\n```\n"

    with ScriptedLLM(decrementing) as llm:
        summary, _ = run(task, tmp_path / "run", overrides(llm, 5, evolution__patch_types="[full]",
                                                           evolution__patch_type_probs="[1.0]"))
    assert summary.best_score is not None and summary.best_score < 50


def test_unusable_reply_is_stored_and_fed_back(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def first_garbage(messages, index):
        if index == 0:
            return "I would improve it by thinking harder."
        return incrementing(messages, index)

    with ScriptedLLM(first_garbage) as llm:
        summary, store = run(task, tmp_path / "run", overrides(llm, 1))
        second = llm.requests[1]
    failed = store.candidates.list("patch_failed")
    assert len(failed) == 1 and failed[0].error
    # Reflexion: the second call continues the conversation with the error.
    assert second[-2] == {"role": "assistant", "content": "I would improve it by thinking harder."}
    assert "could not be used" in second[-1]["content"]
    assert failed[0].error.split(":")[0][:30] in second[-1]["content"]
    assert summary.evaluations == 1


def test_repeated_programs_are_refused_and_never_evaluated_twice(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def always_two(messages, index):
        return "Set two\n```python\nVALUE = 2\n```\n"

    with ScriptedLLM(always_two) as llm:
        summary, store = run(task, tmp_path / "run",
                             overrides(llm, 3, evolution__patch_types="[full]",
                                       evolution__patch_type_probs="[1.0]"))
        later_prompts = [m[-1]["content"] for m in llm.requests[1:]]
    evaluated = [r for r in store.candidates.list("correct") if r.id != 1]
    assert len(evaluated) == 1 and "VALUE = 2" in evaluated[0].source
    assert sql(store, "SELECT COUNT(*) FROM evaluations").fetchone()[0] == 2
    refused = [r for r in store.candidates.list("patch_failed") if "already proposed" in r.error]
    assert refused
    # Fed back to the model in a fresh prompt (continuing the chat makes small models repeat).
    assert any("already proposed" in prompt for prompt in later_prompts)
    assert all(len(m) == 2 for m in llm.requests if "already proposed" in m[-1]["content"])
    # The run cannot make progress, and says so instead of looping forever.
    assert "no usable program" in summary.stop_reason


def test_failing_initial_program_triggers_fix_prompts(tmp_path: Path):
    initial = "# EVOLVE-BLOCK-START\nVALUE = 5000\n# EVOLVE-BLOCK-END\n\ndef run():\n    return VALUE\n"
    task = write_counter_task(tmp_path / "task", initial=initial, limit=1000)

    def fixer(messages, index):
        return "Make it small\n```python\nVALUE = 7\n```\n"

    with ScriptedLLM(fixer) as llm:
        summary, store = run(task, tmp_path / "run",
                             [*overrides(llm, 2), "evolution.repair_initial=true"])
        first_prompt = llm.requests[0][-1]["content"]
    assert "fails" in first_prompt and "exceeds the limit" in first_prompt
    assert store.candidates.get(1).status == "incorrect"
    assert summary.best_score == 7.0
    children = [r for r in store.candidates.list() if r.id != 1 and r.source]
    assert children[0].operator == "fix"


def test_rejected_credentials_abort_the_run_cleanly(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing, status_for=lambda i: 401) as llm:
        evolution = start(task, overrides=overrides(llm, 3), run_dir=tmp_path / "run")
        with pytest.raises(RunAborted, match="LLMAuthError"):
            asyncio.run(evolution.run())
        evolution.store.close()
    store = Store.open(tmp_path / "run")
    assert store.candidates.get(1).status == "correct"  # the initial program was still evaluated
    assert stored_events(store, "session_end")[-1]["payload"]["reason"].startswith("RunAborted")


def test_start_refuses_an_existing_run_and_resume_extends_it(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        run(task, tmp_path / "run", overrides(llm, 2))
        with pytest.raises(RunExists, match="cambrian resume"):
            start(task, overrides=overrides(llm, 2), run_dir=tmp_path / "run")
        evolution = resume(tmp_path / "run", overrides=["evolution.generations=4"])
        summary = asyncio.run(evolution.run())
        evolution.store.close()
    assert summary.evaluations == 4
    store = Store.open(tmp_path / "run")
    assert len(stored_events(store, "session_start")) == 2
    assert stored_events(store, "config_override")[0]["payload"]["overrides"] == ["evolution.generations=4"]


def test_migration_events_are_recorded_and_resume_rebuilds_the_archive(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, overrides=overrides(llm, 9, database__migration_rate="0.5",
                                                    database__migration_interval="2"),
                          run_dir=tmp_path / "run")
        asyncio.run(evolution.run())
        live = {i: sorted(m.id for m in evolution.selector.archive.island(i)) for i in range(2)}
        evolution.store.close()
        resumed = resume(tmp_path / "run")
        resumed.restore()
        rebuilt = {i: sorted(m.id for m in resumed.selector.archive.island(i)) for i in range(2)}
        migrations = stored_events(resumed.store, "migration")
        resumed.store.close()
    assert rebuilt == live
    moved = [m for e in migrations for m in e["payload"]["moves"]]
    assert moved and all(m["from_island"] != m["to_island"] for m in moved)


def test_bandit_learns_to_avoid_a_model_that_never_produces_a_program(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def good_or_bad(messages, index):
        return incrementing(messages, index)

    with ScriptedLLM(good_or_bad) as good, ScriptedLLM(lambda m, i: "no code here") as bad:
        models = [good.model_config(name="good"), bad.model_config(name="bad")]
        sets = ["evolution.generations=20", "llm.models=" + json.dumps(models),
                "llm.selection=ucb1", "llm.exploration=0.5", "evolution.max_patch_attempts=1",
                "evolution.max_patch_resamples=1", "novelty.enabled=false"]
        summary, store = run(task, tmp_path / "run", sets)
    pulls = {row.model: row.calls for row in store.contexts.ledger()}
    assert pulls["good"] > 2 * pulls["bad"]
    saved = store.state.get("ensemble")
    assert all(x == 0.0 for x in saved["bad@0.7"]["improvements"])
    assert summary.best_score > 1.0
