"""``cambrian replay``: a stored run re-executed with every LLM reply served from its trace
reaches the same programs, scores, archive and best (the scripted model is never asked again);
a noisy evaluator is named; ``--from N --model M`` continues live with another model; a run
folder that is missing, damaged or foreign is one line."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support.scripted_llm import (
    ScriptedLLM,
    counter_reply,
    current_value,
    incrementing,
    write_counter_task,
)

from cambrian.api import ReplayError, replay, start
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store

CLI = [sys.executable, "-m", "cambrian.cli"]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Proposals side by side with three evaluations: the order of replies and commits is left to
# timing in the recorded run, so only a replay that follows the recorded order can match it.
CONCURRENT = ["evolution.max_parallel_evaluations=3", "evolution.max_proposals_in_flight=2"]


def cambrian(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def record(task: Path, run_dir: Path, llm: ScriptedLLM, *sets: str) -> None:
    evolution = start(task, run_dir=run_dir, overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", "novelty.enabled=false", *sets])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def rows(store_path: Path, sql: str) -> list[tuple]:
    connection = sqlite3.connect(store_path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


CANDIDATES = ("SELECT id, generation, island, parent_id, operator, status, source, description, "
              "model, score, error, notes_json, context_id FROM candidates ORDER BY id")
EVALUATIONS = ("SELECT candidate_id, stage, status, combined_score, public_json, text_feedback "
               "FROM evaluations ORDER BY id")
CONTEXTS = ("SELECT id, purpose, model, params_json, messages_json, response_text, "
            "prompt_tokens, completion_tokens, cost_usd, error FROM contexts ORDER BY id")
EDGES = "SELECT parent_id, child_id, kind, operator FROM edges ORDER BY rowid"
STATE = ("SELECT key, value FROM search_state WHERE key IN "
         "('rng', 'selector', 'archive_snapshot', 'ensemble', 'hooks') ORDER BY key")


def test_a_replay_reaches_the_same_run_bit_for_bit_without_calling_the_model(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", sleep=0.05)
    with ScriptedLLM(incrementing, delay_s=0.02) as llm:
        record(task, tmp_path / "run", llm, "evolution.generations=12", "meta.enabled=true",
               "meta.interval=4", *CONCURRENT)
        asked = len(llm.requests)
        replayed = cambrian("replay", str(tmp_path / "run"), "--to", str(tmp_path / "replay"))
        assert len(llm.requests) == asked, "a replay served from the trace called the model"
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "Identical" in replayed.stdout and "no model called" in replayed.stdout
    original, copy = tmp_path / "run" / "run.sqlite", tmp_path / "replay" / "run.sqlite"
    # Bit for bit, read straight from both stores: every candidate (program, parent, status,
    # score, notes), every evaluation row, every LLM call, the lineage and the search state.
    for sql in (CANDIDATES, EVALUATIONS, CONTEXTS, EDGES, STATE):
        assert rows(original, sql) == rows(copy, sql), sql
    purposes = {purpose for (purpose,) in rows(original, "SELECT purpose FROM contexts")}
    assert {"mutation", "meta"} <= purposes  # the scratchpad's calls were replayed too
    assert (tmp_path / "replay" / "best").is_dir()
    report = json.loads((tmp_path / "replay" / "replay_report.json").read_text())
    assert report["identical"] and report["stop"] == "completed" and not report["differences"]
    assert report["served_calls"] == len(rows(original, "SELECT id FROM contexts"))
    with Store.open(tmp_path / "replay", read_only=True) as store:
        started = store.events.payloads("replay_start")
        assert started and started[0]["source_run"] == str(tmp_path / "run")


NOISY_EVALUATOR = '''import random
import runpy


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    noise = random.random() if value >= {noisy_from} else 0.0
    return {{"combined_score": float(value) + noise, "public": {{"value": value}}}}
'''


def test_a_noisy_evaluator_is_named_with_the_candidates_it_scored_differently(tmp_path: Path):
    noisy_from = 6  # values below it score exactly their value
    task = write_counter_task(tmp_path / "task")
    (task / "evaluate.py").write_text(NOISY_EVALUATOR.format(noisy_from=noisy_from))
    with ScriptedLLM(incrementing) as llm:
        record(task, tmp_path / "run", llm, "evolution.generations=8")
        replayed = cambrian("replay", str(tmp_path / "run"), "--to", str(tmp_path / "replay"))
    assert replayed.returncode == 8, replayed.stdout + replayed.stderr
    assert "The evaluator is not deterministic" in replayed.stdout
    report = json.loads((tmp_path / "replay" / "replay_report.json").read_text())
    assert not report["identical"]
    values = {candidate_id: json.loads(public)["value"] for candidate_id, public in rows(
        tmp_path / "run" / "run.sqlite",
        "SELECT candidate_id, public_json FROM evaluations WHERE stage='main'")}
    noisy = set(report["noisy_candidates"])
    replayed_ids = {candidate_id for (candidate_id,) in rows(  # (a replay that diverged stops
        tmp_path / "replay" / "run.sqlite",                     # with children unevaluated)
        "SELECT candidate_id FROM evaluations WHERE stage='main'")}
    first_noisy = next(i for i in sorted(values)
                       if values[i] >= noisy_from and i in replayed_ids)
    assert first_noisy in noisy  # the first candidate it scored at random is named
    exact = [d for d in report["differences"]  # none it scored exactly (what differed, if so)
             if d.get("candidate_id") in noisy and values[d["candidate_id"]] < noisy_from]
    assert not exact, exact  # (a child still pending when the replay stopped is not one)
    named = {d["candidate_id"] for d in report["differences"] if d["what"] == "score"}
    assert noisy <= named
    assert re.search(rf"candidates [0-9, ]*\b{first_noisy}\b", replayed.stdout)


def hundredfold(messages: list[dict[str, str]], index: int) -> str:
    """Another model: raises the parent's VALUE by 100 each time."""
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    wants_diff = "SEARCH" in first_user.split("## Your task")[-1]
    return counter_reply(current_value(messages), 100, wants_diff)


def test_from_n_continues_the_replayed_run_with_another_live_model(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", sleep=0.05)
    with ScriptedLLM(incrementing) as llm, ScriptedLLM(hundredfold) as other:
        record(task, tmp_path / "run", llm, "evolution.generations=8", *CONCURRENT)
        asked = len(llm.requests)
        report = replay(tmp_path / "run", to=tmp_path / "replay", from_evaluation=3,
                        model="other", api_base=other.base_url)
        assert len(llm.requests) == asked  # the recorded model is never asked
        assert other.requests  # the live one is
    assert report.identical and report.stop == "cut" and report.exit_code == 0
    assert report.continuation is not None and report.continuation.model == "other"
    assert report.continuation.evaluations == 8 and report.continuation.outcome == "completed"
    with Store.open(tmp_path / "run", read_only=True) as original, \
            Store.open(tmp_path / "replay", read_only=True) as store:
        # Up to evaluation 3 the replay is the recorded run: same children, same order.
        served = [row for row in store.candidates.list() if row.model != "other"]
        assert served and all(
            (row.source, row.parent_id, row.notes) == (
                original.candidates.get(row.id).source, original.candidates.get(row.id).parent_id,
                original.candidates.get(row.id).notes)
            for row in served)
        recorded_order = [i for i in original.evaluations.committed_order()][:4]
        assert store.evaluations.committed_order()[:4] == recorded_order
        # Then the other model wrote the children: each raised its parent by 100.
        live = [row for row in store.candidates.list() if row.model == "other"]
        assert live and all(row.status is not CandidateStatus.PENDING for row in live)
        assert max(row.score or 0 for row in live) >= 100
        assert {c.model for c in store.contexts.list()} == {"scripted", "other"}
        assert store.events.payloads("replay_start")[0]["until"] == 3
        assert store.events.payloads("replay_stop")[0]["ended"] == "cut"
        assert store.events.payloads("config_override")  # the model change is on record


def test_a_request_the_run_never_sent_stops_the_replay_naming_where_it_diverged(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        record(task, tmp_path / "run", llm, "evolution.generations=5")
    # The replay's prompts now differ from the recorded ones (the problem statement changed).
    (task / "problem.md").write_text("Make VALUE as large as the limit allows.\n")
    report = replay(tmp_path / "run", to=tmp_path / "replay")
    assert report.stop == "diverged" and not report.identical and report.exit_code == 8
    assert "never sent" in report.stop_reason and "next recorded call 1" in report.stop_reason
    assert any("task files changed" in note for note in report.notes)


def test_a_missing_damaged_or_foreign_run_is_one_line(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "run.sqlite").write_bytes(b"this is not a database" * 100)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    connection = sqlite3.connect(foreign / "run.sqlite")
    connection.execute("CREATE TABLE programs(id TEXT, code TEXT)")
    connection.commit()
    connection.close()
    for folder, words in ((empty, "holds no run"), (damaged, "damaged"),
                          (foreign, "not a Cambrian run store"),
                          (tmp_path / "absent", "holds no run")):
        result = cambrian("replay", str(folder), "--to", str(tmp_path / "out"))
        assert result.returncode == 2, result.stdout + result.stderr
        assert words in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "out").exists()


def test_wrong_options_are_one_line_before_anything_is_made(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        record(task, tmp_path / "run", llm, "evolution.generations=2")
    run = str(tmp_path / "run")
    with pytest.raises(ReplayError, match="continue from one before its last"):
        replay(tmp_path / "run", to=tmp_path / "out", from_evaluation=2)
    for args, words in (
            (["--to", str(tmp_path / "out"), "--model", "other"], "give --from N too"),
            (["--to", str(tmp_path / "out"), "--from", "5"], "evaluations 0 to 2"),
            (["--to", run], "new folder"),
            (["--to", str(tmp_path / "out"), "--task", str(tmp_path / "gone")], "is gone")):
        result = cambrian("replay", run, *args)
        assert result.returncode == 2, result.stdout + result.stderr
        assert words in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "out").exists()
    taken = cambrian("replay", run, "--to", str(tmp_path / "out"))
    assert taken.returncode == 0, taken.stdout + taken.stderr
    again = cambrian("replay", run, "--to", str(tmp_path / "out"))
    assert again.returncode == 2 and "already holds a run" in again.stderr


def test_the_replay_provider_serves_a_recorded_run_to_a_new_run(tmp_path: Path):
    """``provider: replay`` (registered like the other providers): a new run whose requests
    are the recorded run's gets its replies; a request it never sent is a refused request."""
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        record(task, tmp_path / "run", llm, "evolution.generations=3")
        asked = len(llm.requests)
        model = {"provider": "replay", "model": str(tmp_path / "run"), "name": "scripted",
                 "context_window": 16384, "temperatures": [0.7]}
        for run_dir, seed in (("same", 0), ("other-seed", 7)):
            evolution = start(task, run_dir=tmp_path / run_dir, overrides=[
                "llm.models=[" + json.dumps(model) + "]", "novelty.enabled=false",
                "evolution.generations=1", f"evolution.seed={seed}"])
            try:
                asyncio.run(evolution.run())
            finally:
                evolution.store.close()
        assert len(llm.requests) == asked
    recorded = rows(tmp_path / "run" / "run.sqlite", "SELECT response_text FROM contexts")
    served = rows(tmp_path / "same" / "run.sqlite", "SELECT response_text, error FROM contexts")
    assert served[0] == (recorded[0][0], "")
    # Another seed draws another intent for the first proposal: its prompt was never sent.
    refused = rows(tmp_path / "other-seed" / "run.sqlite", "SELECT error FROM contexts")
    assert refused and "ReplayMissing" in refused[0][0] and "never sent" in refused[0][0]


@pytest.mark.local_llm
@pytest.mark.timeout(1800)
def test_a_run_of_the_local_model_replays_bit_for_bit(tmp_path: Path):
    # Short replies keep the 0.5B's calls short; a cut reply is replayed like any other.
    model = {"provider": "local", "model": "qwen2.5-coder-0.5b-instruct", "max_tokens": 200}
    evolution = start(EXAMPLES / "circle_packing", run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps(model) + "]", "evolution.generations=2",
        "budget.max_llm_calls=3", "meta.enabled=false", "novelty.enabled=false",
        "comprehension.enabled=false"])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    report = replay(tmp_path / "run", to=tmp_path / "replay")
    assert report.identical, report.differences + [report.stop_reason]
    original, copy = tmp_path / "run" / "run.sqlite", tmp_path / "replay" / "run.sqlite"
    for sql in (CANDIDATES, EVALUATIONS, CONTEXTS, STATE):
        assert rows(original, sql) == rows(copy, sql), sql
    calls = rows(original, "SELECT params_json FROM contexts")
    assert calls and all(json.loads(p)["grammar"] for (p,) in calls)  # grammar-constrained
    assert report.served_calls == len(calls)
