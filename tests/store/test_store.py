from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from cambrian.evaluate.result import EvaluationResult
from cambrian.llm.base import GenerationParams, LLMRequest, LLMResponse, Message, Usage
from cambrian.store.store import Store, source_hash


def new_store(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "run", create=True)
    store.create_run(run_id="r1", task_name="t", task_dir="/t", direction="maximize",
                     language="python", config={"a": 1}, seed=0, code_version="test")
    return store


def test_open_missing_store_is_a_clear_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no run store"):
        Store.open(tmp_path / "nothing")


def test_candidate_and_evaluation_round_trip(tmp_path: Path):
    store = new_store(tmp_path)
    cid = store.add_candidate(generation=0, island=0, parent_id=None, operator="init",
                              status="pending", language="python", source="x = 1\n")
    result = EvaluationResult(status="ok", combined_score=1.5, public={"a": 1.0},
                              private={"secret": float("nan")}, text_feedback="fine",
                              stdout="out", duration_s=0.2, extra={"cases": [1, 2]})
    store.add_evaluation(cid, result)
    store.update_candidate(cid, status="correct", score=1.5)
    row = store.candidate(cid)
    assert row.status == "correct" and row.score == 1.5
    assert row.source_hash == source_hash("x = 1\n")
    loaded = store.evaluation(cid)
    assert loaded.public == {"a": 1.0}
    assert loaded.private == {"secret": None}  # NaN stored as null, not as invalid JSON
    assert loaded.extra == {"cases": [1, 2]}
    assert store.find_evaluated(row.source_hash).id == cid


def test_non_finite_score_is_stored_as_null(tmp_path: Path):
    store = new_store(tmp_path)
    cid = store.add_candidate(generation=1, island=0, parent_id=None, operator="diff",
                              status="pending", language="python", source="y")
    store.update_candidate(cid, status="incorrect", score=math.inf)
    assert store.candidate(cid).score is None


def test_transaction_rolls_back_everything(tmp_path: Path):
    store = new_store(tmp_path)
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.add_candidate(generation=1, island=0, parent_id=None, operator="diff",
                                status="pending", language="python", source="a")
            store.put_state("k", 1)
            raise RuntimeError("boom")
    assert store.count() == 0
    assert store.get_state("k") is None


def test_state_and_events_survive_reopening(tmp_path: Path):
    store = new_store(tmp_path)
    store.put_state("rng", {"state": [1, 2, 3]})
    store.add_event("migration", {"moves": [1]})
    store.close()
    reopened = Store.open(tmp_path / "run")
    assert reopened.get_state("rng") == {"state": [1, 2, 3]}
    assert reopened.events("migration")[0]["payload"] == {"moves": [1]}


def test_commit_order_is_the_order_results_landed(tmp_path: Path):
    store = new_store(tmp_path)
    first = store.add_candidate(generation=1, island=0, parent_id=None, operator="init",
                                status="pending", language="python", source="a")
    second = store.add_candidate(generation=2, island=0, parent_id=None, operator="diff",
                                 status="pending", language="python", source="b")
    store.add_evaluation(second, EvaluationResult(status="ok", combined_score=2.0))
    store.update_candidate(second, status="correct", score=2.0)
    store.add_evaluation(first, EvaluationResult(status="crashed", error="x"))
    store.update_candidate(first, status="incorrect")
    order = [(row.id, result.status) for row, result in store.evaluated_in_commit_order()]
    assert order == [(second, "ok"), (first, "crashed")]


def test_ledger_aggregates_per_model(tmp_path: Path):
    store = new_store(tmp_path)
    request = LLMRequest((Message("user", "hi"),), GenerationParams(temperature=0.5))
    for tokens in (10, 20):
        response = LLMResponse("ok", "m1", Usage(tokens, 5, 3), "stop", 1.0, cost_usd=0.01)
        store.add_context(purpose="mutation", model="m1", provider="openai", request=request,
                          response=response)
    store.add_context(purpose="mutation", model="m2", provider="local", request=request,
                      response=None, error="LLMTimeout: slow")
    ledger = {row["model"]: row for row in store.ledger()}
    assert ledger["m1"]["calls"] == 2 and ledger["m1"]["prompt_tokens"] == 30
    assert ledger["m1"]["cached_tokens"] == 6
    assert ledger["m1"]["cost_usd"] == pytest.approx(0.02)
    assert ledger["m2"]["failed_calls"] == 1
    assert store.llm_call_count() == 3


def test_schema_version_mismatch_is_refused(tmp_path: Path):
    store = new_store(tmp_path)
    store.set_meta("schema_version", "999")
    store.close()
    with pytest.raises(RuntimeError, match="schema 999"):
        Store.open(tmp_path / "run")


def test_store_is_plain_sqlite_in_wal_mode(tmp_path: Path):
    store = new_store(tmp_path)
    store.close()
    connection = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "candidates", "evaluations", "edges", "contexts", "environments"} <= tables
