from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from support.store_queries import add_candidate, add_context, sql

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import BanditSnapshot, CandidateProposed, SessionEnded, UnknownEvent
from cambrian.core.status import CandidateStatus
from cambrian.llm.base import GenerationParams, LLMRequest, LLMResponse, Message, Usage
from cambrian.store.candidates import source_hash
from cambrian.store.migrations import SCHEMA_VERSION
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.schema import SIDE_TABLES_DDL
from cambrian.store.store import Store, StoreError
from cambrian.trace.label_cache import LabelCache


def new_store(tmp_path: Path, **options) -> Store:
    store = Store.open(tmp_path / "run", create=True, **options)
    store.runs.create(run_id="r1", task_name="t", task_dir="/t", direction="maximize",
                      language="python", config={"a": 1}, seed=0, code_version="test")
    return store


def test_open_missing_store_is_a_clear_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no run store"):
        Store.open(tmp_path / "nothing")


def test_candidate_and_evaluation_round_trip(tmp_path: Path):
    store = new_store(tmp_path)
    cid = add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                        status="pending", language="python", source="x = 1\n")
    result = EvaluationResult(status="ok", combined_score=1.5, public={"a": 1.0},
                              private={"secret": float("nan")}, text_feedback="fine",
                              stdout="out", duration_s=0.2, extra={"cases": [1, 2]})
    store.evaluations.add(cid, result, worker="node-2")
    store.candidates.update(cid, status=CandidateStatus.CORRECT, score=1.5)
    row = store.candidates.get(cid)
    assert row.status is CandidateStatus.CORRECT and row.score == 1.5
    assert row.status == "correct"  # one status type, equal to its stored value
    assert row.source_hash == source_hash("x = 1\n")
    loaded = store.evaluations.latest(cid)
    assert loaded.public == {"a": 1.0}
    assert loaded.private == {"secret": None}  # NaN stored as null, not as invalid JSON
    assert loaded.extra == {"cases": [1, 2]}
    assert store.evaluations.worker_of(cid) == "node-2"
    assert store.candidates.find_evaluated(row.source_hash).id == cid


def test_non_finite_score_is_stored_as_null(tmp_path: Path):
    store = new_store(tmp_path)
    cid = add_candidate(store, generation=1, island=0, parent_id=None, operator="diff",
                        status="pending", language="python", source="y")
    store.candidates.update(cid, status="incorrect", score=math.inf)
    assert store.candidates.get(cid).score is None


def test_transaction_rolls_back_everything(tmp_path: Path):
    store = new_store(tmp_path)
    with pytest.raises(RuntimeError), store.transaction():
        add_candidate(store, generation=1, island=0, parent_id=None, operator="diff",
                      status="pending", language="python", source="a")
        store.state.put("k", 1)
        raise RuntimeError("boom")
    assert store.candidates.count() == 0
    assert store.state.get("k") is None


def test_state_and_events_survive_reopening(tmp_path: Path):
    store = new_store(tmp_path)
    store.state.put("rng", {"state": [1, 2, 3]})
    store.events.add(SessionEnded(reason="done", outcome="completed"))
    store.events.add(UnknownEvent(name="plugin_thing", data={"x": 1}))
    store.close()
    reopened = Store.open(tmp_path / "run")
    assert reopened.state.get("rng") == {"state": [1, 2, 3]}
    assert reopened.events.of_type(SessionEnded) == [SessionEnded("done", "completed")]
    unknown = reopened.events.list("plugin_thing")[0]
    assert unknown.kind == "plugin_thing" and unknown.event.payload() == {"x": 1}


def test_commit_order_is_the_order_results_landed(tmp_path: Path):
    store = new_store(tmp_path)
    first = add_candidate(store, generation=1, island=0, parent_id=None, operator="init",
                          status="pending", language="python", source="a")
    second = add_candidate(store, generation=2, island=0, parent_id=None, operator="diff",
                           status="pending", language="python", source="b")
    store.evaluations.add(second, EvaluationResult(status="ok", combined_score=2.0))
    store.candidates.update(second, status="correct", score=2.0)
    store.evaluations.add(first, EvaluationResult(status="crashed", error="x"))
    store.candidates.update(first, status="incorrect")
    order = [(row.id, result.status)
             for row, result in store.candidates.evaluated_in_commit_order()]
    assert order == [(second, "ok"), (first, "crashed")]


def test_ledger_aggregates_per_model(tmp_path: Path):
    store = new_store(tmp_path)
    request = LLMRequest((Message("user", "hi"),), GenerationParams(temperature=0.5))
    for tokens in (10, 20):
        response = LLMResponse("ok", "m1", Usage(tokens, 5, 3), "stop", 1.0, cost_usd=0.01)
        add_context(store, purpose="mutation", model="m1", provider="openai", request=request,
                    response=response)
    add_context(store, purpose="mutation", model="m2", provider="local", request=request,
                response=None, error="LLMTimeout: slow")
    ledger = {row.model: row for row in store.contexts.ledger()}
    assert ledger["m1"].calls == 2 and ledger["m1"].prompt_tokens == 30
    assert ledger["m1"].cached_tokens == 6
    assert ledger["m1"].cost_usd == pytest.approx(0.02)
    assert ledger["m2"].failed_calls == 1
    assert store.contexts.count() == 3
    assert store.contexts.count_by_model("mutation") == {"m1": 2, "m2": 1}


def test_a_newer_store_is_refused_in_one_line(tmp_path: Path):
    store = new_store(tmp_path)
    store.meta.set("schema_version", "999")
    store.close()
    with pytest.raises(StoreError, match="newer Cambrian.*schema 999") as raised:
        Store.open(tmp_path / "run")
    assert "\n" not in str(raised.value)


def test_a_damaged_store_is_refused_in_one_line(tmp_path: Path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="damaged or not an SQLite database") as raised:
        Store.open(tmp_path / "run")
    assert "\n" not in str(raised.value)


def test_a_foreign_sqlite_file_is_refused_with_what_to_do(tmp_path: Path):
    path = tmp_path / "run" / "run.sqlite"
    path.parent.mkdir()
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE programs (id TEXT, code TEXT)")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match="not a Cambrian run store.*trace import"):
        Store.open(tmp_path / "run")


def test_a_label_cache_of_an_older_version_is_adopted_with_its_labels(tmp_path: Path):
    """Older versions kept the trace judge's labels of a foreign trace in a sidecar file that
    held that one table: it opens (its labels reused), it is not refused as foreign."""
    path = tmp_path / "trace" / "labels.sqlite"
    path.parent.mkdir()
    connection = sqlite3.connect(path)
    connection.execute(
        "CREATE TABLE IF NOT EXISTS trace_edit_labels (judge TEXT NOT NULL, rubric TEXT NOT "
        "NULL, diff_sha256 TEXT NOT NULL, labels_json TEXT NOT NULL, rationale TEXT NOT NULL, "
        "created_at REAL NOT NULL, PRIMARY KEY (judge, rubric, diff_sha256))")
    connection.execute("INSERT INTO trace_edit_labels VALUES ('j', 'r1', 'abc', "
                       "'[\"tuning\"]', 'a constant', 0)")
    connection.commit()
    connection.close()
    with LabelCache(path) as cache:
        assert cache.get_many("j", "r1", ["abc"]) == {"abc": (("tuning",), "a constant")}
        assert cache.judges() == [("j", "r1", 1)]


def _schema_1_store(path: Path) -> None:
    """A store as Cambrian wrote it at schema 1: no side tables, no new columns, and the
    algorithm's hook state saved flat under "hooks"."""
    from cambrian.store.schema import DDL

    v1_ddl = (DDL.replace(SIDE_TABLES_DDL, "")
              .replace("    response_dropped_chars INTEGER NOT NULL DEFAULT 0,\n", "")
              .replace(",\n    -- where it ran: \"local\", or the executor's worker/node name\n"
                       "    worker         TEXT NOT NULL DEFAULT 'local'", "")
              .replace("CREATE INDEX IF NOT EXISTS idx_events_kind ON events(kind);", ""))
    connection = sqlite3.connect(path)
    connection.executescript(v1_ddl)
    connection.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    connection.execute("INSERT INTO runs(id, created_at, task_name, task_dir, direction, "
                       "language, config_json, seed, code_version) "
                       "VALUES ('old', 0, 't', '/t', 'maximize', 'python', '{}', 0, 'v1')")
    connection.execute("INSERT INTO search_state VALUES ('hooks', ?)",
                       (json.dumps({"merges": 2}),))
    # Guidance was created on first use at schema 1, without a target column.
    connection.execute("CREATE TABLE guidance (id INTEGER PRIMARY KEY, created_at REAL NOT NULL, "
                       "action TEXT NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL, "
                       "active_text TEXT NOT NULL, restores_id INTEGER)")
    connection.execute("INSERT INTO guidance(created_at, action, source, text, active_text) "
                       "VALUES (1, 'append', 'cli', 'go wide', 'go wide')")
    connection.commit()
    connection.close()


def test_a_store_of_an_older_version_is_migrated_on_open(tmp_path: Path):
    path = tmp_path / "run" / "run.sqlite"
    path.parent.mkdir()
    _schema_1_store(path)
    store = Store.open(tmp_path / "run")
    assert store.meta.get("schema_version") == str(SCHEMA_VERSION)
    assert store.runs.info().code_version == "v1"
    assert store.guidance.latest().text == "go wide"  # kept, with the new target column
    assert store.state.get("hooks") == {"algorithm hooks": {"merges": 2}}
    store.prompts.add("a system prompt")  # a side table the migration created
    cid = add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                        status="pending", language="python", source="x")
    store.evaluations.add(cid, EvaluationResult(status="ok", combined_score=1.0))
    assert store.evaluations.worker_of(cid) == "local"
    store.close()
    assert Store.open(tmp_path / "run").meta.get("schema_version") == str(SCHEMA_VERSION)


def test_every_table_of_a_run_is_in_the_schema(tmp_path: Path):
    store = new_store(tmp_path)
    store.close()
    connection = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "candidates", "evaluations", "edges", "contexts", "environments",
            "guidance", "system_prompts", "trace_edit_labels", "control_requests"} <= tables


def test_secret_values_are_never_written(tmp_path: Path):
    secret = "sk-live-0123456789abcdef"
    store = new_store(tmp_path, secrets=(secret,))
    cid = add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                        status="pending", language="python", source=f"KEY = '{secret}'",
                        notes={"seen": secret})
    store.evaluations.add(cid, EvaluationResult(status="crashed", stdout=f"key={secret}",
                                                error=f"bad key {secret}"))
    request = LLMRequest((Message("user", f"use {secret}"),))
    add_context(store, purpose="mutation", model="m", provider="openai", request=request,
                response=LLMResponse(f"echo {secret}", "m", Usage(), "stop", 0.1))
    store.close()
    raw = (tmp_path / "run" / "run.sqlite").read_bytes()
    assert secret.encode() not in raw
    reopened = Store.open(tmp_path / "run")
    assert "[redacted]" in reopened.candidates.get(cid).source


def test_unconfigured_credentials_of_the_environment_are_never_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A key the run's config does not name (a task's scorer read it from the environment)
    is redacted too: every credential-named variable's value, whatever the variable."""
    found = {"OTHER_SERVICE_API_KEY": "sk-unconfigured-0123456789",
             "HF_TOKEN": "hf_abcdefghijklmnop", "PGPASSWORD": "correct-horse-battery"}
    for name, value in found.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MAX_TOKENS", "123456789")  # not a credential: kept
    store = new_store(tmp_path)  # no configured secret
    leaked = " ".join(found.values())
    cid = add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                        status="incorrect", language="python", source="print(1)",
                        error=f"case 1: WA: scorer rejected the output: {leaked}")
    store.evaluations.add(cid, EvaluationResult(status="incorrect", error=leaked,
                                                text_feedback=f"seen {leaked} 123456789"))
    store.close()
    raw = (tmp_path / "run" / "run.sqlite").read_bytes()
    assert not [name for name, value in found.items() if value.encode() in raw]
    reopened = Store.open(tmp_path / "run")
    assert reopened.evaluations.latest(cid).text_feedback.endswith("123456789")
    reopened.close()


def test_recorder_publishes_events_only_after_the_commit(tmp_path: Path):
    store = new_store(tmp_path)
    recorder = Recorder(store)
    seen: list[object] = []
    recorder.bus.subscribe(seen.append)
    with recorder.transaction():
        cid = recorder.add_candidate(NewCandidate(
            generation=0, island=0, parent_id=None, operator="init", status="pending",
            language="python", source="x"), arm="m@0.5")
        recorder.emit(BanditSnapshot(pulls=1, shares={"m@0.5": 1.0}))
        assert seen == []  # nothing is published before the transaction commits
    assert seen == [CandidateProposed(candidate_id=cid, operator="init", model="m@0.5"),
                    BanditSnapshot(pulls=1, shares={"m@0.5": 1.0})]
    with pytest.raises(RuntimeError), recorder.transaction():
        recorder.emit(BanditSnapshot(pulls=2, shares={}))
        raise RuntimeError("rolled back")
    assert len(seen) == 2 and len(store.events.of_type(BanditSnapshot)) == 1
    assert sql(store, "SELECT COUNT(*) FROM events").fetchone()[0] == 2
