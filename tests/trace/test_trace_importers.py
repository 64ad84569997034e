"""Importers for ShinkaEvolve results and OpenEvolve checkpoints, on folders built by hand in
the shapes those frameworks write (ShinkaEvolve's ``programs`` table; OpenEvolve's
``checkpoint_N/metadata.json`` + ``programs/<id>.json``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cambrian.status import run_status
from cambrian.store.store import Store
from cambrian.trace import analyse_cycling, analyse_static, import_to_store, load_trace
from cambrian.trace.cycling import RecycleCounts
from cambrian.trace.importers import UnknownTraceFormat, detect_format

SHINKA_COLUMNS = """
    id TEXT PRIMARY KEY, code TEXT NOT NULL, language TEXT NOT NULL, parent_id TEXT,
    archive_inspiration_ids TEXT, top_k_inspiration_ids TEXT, generation INTEGER NOT NULL,
    timestamp REAL NOT NULL, code_diff TEXT, combined_score REAL, public_metrics TEXT,
    private_metrics TEXT, text_feedback TEXT, complexity REAL, embedding TEXT,
    embedding_pca_2d TEXT, embedding_pca_3d TEXT, embedding_cluster_id INTEGER,
    correct BOOLEAN DEFAULT 0, children_count INTEGER DEFAULT 0, metadata TEXT,
    migration_history TEXT, island_idx INTEGER, system_prompt_id TEXT
"""

SEED = "import numpy as np\nSTEP = 0.1\nITERS = 100\n\ndef run():\n    return STEP * ITERS\n"
UUID_A, UUID_B = "0a7c1f3e-aaaa-4000-8000-000000000001", "1b2d3e4f-bbbb-4000-8000-000000000002"
UUID_C, UUID_D = "2c3e4f50-cccc-4000-8000-000000000003", "3d4f5061-dddd-4000-8000-000000000004"


def _shinka_program(uid: str, code: str, generation: int, parent: str | None, score: float,
                    correct: bool, **extra: object) -> dict[str, object]:
    llm_result = None if parent is None else {
        "msg": f"Improve {parent}", "system_msg": "You are an expert.", "model_name": "gpt-test",
        "content": f"<NAME>gen{generation}</NAME>\n```python\n{code}```",
        "kwargs": {"temperature": 0.5},
        "input_tokens": 1000 + generation, "output_tokens": 200, "cost": 0.01,
    }
    metadata = {"patch_type": "init" if parent is None else "diff",
                "patch_name": f"gen{generation}",
                "model_name": None if parent is None else "gpt-test", "compute_time": 1.5,
                "stdout_log": f"stdout {generation}", "stderr_log": "", "llm_result": llm_result,
                "api_costs": 0.01}
    row: dict[str, object] = {
        "id": uid, "code": code, "language": "python", "parent_id": parent,
        "archive_inspiration_ids": "[]", "top_k_inspiration_ids": "[]", "generation": generation,
        "timestamp": 1_700_000_000.0 + generation, "code_diff": None, "combined_score": score,
        "public_metrics": json.dumps({"score": score}), "private_metrics": json.dumps({"held": 1}),
        "text_feedback": "", "complexity": 3.0, "embedding": "[]", "correct": int(correct),
        "metadata": json.dumps(metadata), "migration_history": "[]", "island_idx": 0,
    }
    row.update(extra)
    return row


def make_shinka_results(folder: Path) -> Path:
    """a (seed) → b (STEP 0.1→0.2) → c (STEP back to 0.1, ITERS 100→200; incorrect)
                                  → d (ITERS 100→300; inspired by c and a) — the best."""
    folder.mkdir(parents=True)
    b = SEED.replace("STEP = 0.1", "STEP = 0.2")
    c = SEED.replace("ITERS = 100", "ITERS = 200")
    d = b.replace("ITERS = 100", "ITERS = 300")
    rows = [
        _shinka_program(UUID_A, SEED, 0, None, 10.0, True),
        _shinka_program(UUID_B, b, 1, UUID_A, 20.0, True),
        _shinka_program(UUID_C, c, 2, UUID_B, 0.0, False, text_feedback=json.dumps(["bad"])),
        _shinka_program(UUID_D, d, 3, UUID_B, 60.0, True,
                        archive_inspiration_ids=json.dumps([UUID_C]),
                        top_k_inspiration_ids=json.dumps([UUID_A]),
                        private_metrics=json.dumps({"held": 0.5, "nan": float("nan")})),
    ]
    with sqlite3.connect(folder / "programs.sqlite") as db:
        db.execute(f"CREATE TABLE programs ({SHINKA_COLUMNS})")
        for row in reversed(rows):  # insertion order must not matter
            columns = ", ".join(row)
            db.execute(f"INSERT INTO programs ({columns}) VALUES ({', '.join('?' * len(row))})",
                       tuple(row.values()))
    return folder


def test_shinka_results_become_a_trace(tmp_path: Path):
    folder = make_shinka_results(tmp_path / "results_circle")
    assert detect_format(folder) == detect_format(folder / "programs.sqlite") == "shinkaevolve"
    trace = load_trace(folder)
    assert trace.run.framework == "shinkaevolve" and trace.run.task == "results_circle"
    assert [c.id for c in trace.candidates] == [UUID_A, UUID_B, UUID_C, UUID_D]
    assert [c.status for c in trace.candidates] == ["correct", "correct", "incorrect", "correct"]
    best = trace.best()
    assert best is not None and best.id == UUID_D and best.score == 60.0
    d = trace.candidate(UUID_D)
    assert d.operator == "diff" and d.model == "gpt-test" and d.description == "gen3"
    assert "llm_result" not in d.notes and d.notes["api_costs"] == 0.01
    edges = {(e.parent_id, e.child_id, e.kind) for e in trace.edges}
    assert edges == {(UUID_A, UUID_B, "parent"), (UUID_B, UUID_C, "parent"),
                     (UUID_B, UUID_D, "parent"), (UUID_C, UUID_D, "inspiration"),
                     (UUID_A, UUID_D, "inspiration")}
    context = next(c for c in trace.contexts if c.id == d.context_id)
    assert context.messages[0] == {"role": "system", "content": "You are an expert."}
    assert context.prompt_tokens == 1003 and context.cost_usd == 0.01
    assert "ITERS = 300" in (context.response_text or "")
    evaluation = next(e for e in trace.evaluations if e.candidate_id == UUID_D)
    assert evaluation.private == {"held": 0.5, "nan": None} and evaluation.stdout == "stdout 3"
    assert next(e for e in trace.evaluations if e.candidate_id == UUID_C).text_feedback == "bad"


def test_shinka_trace_analyses(tmp_path: Path):
    trace = load_trace(make_shinka_results(tmp_path / "results"))
    static = analyse_static(trace)
    assert static.lineage_depth == 2 and static.best_lineage == [UUID_A, UUID_B, UUID_D]
    assert static.dead_branch_share == pytest.approx(1 / 3)  # c is off the best lineage
    cycling = {e.child_id: e for e in analyse_cycling(trace).edits}
    # c restores 'STEP = 0.1', deleted by its parent's edit one generation earlier.
    assert cycling[UUID_C].lineage == RecycleCounts(added=2, reintroduced=1, literal=1)
    assert cycling[UUID_C].lineage_spans == (1,)
    # d's 'ITERS = 300': 'ITERS = 100' was deleted only on the sibling branch (c): a tuning
    # re-introduction run-wide, nothing on its own lineage.
    assert cycling[UUID_D].lineage == RecycleCounts(added=1)
    assert cycling[UUID_D].run == RecycleCounts(added=1, tuning=1)


def test_shinka_import_to_a_cambrian_store(tmp_path: Path):
    folder = make_shinka_results(tmp_path / "results")
    run_dir = import_to_store(folder, tmp_path / "imported")
    store = Store.open(run_dir)
    try:
        rows = store.candidates.list()
        assert [r.notes["trace_id"] for r in rows] == [UUID_A, UUID_B, UUID_C, UUID_D]
        assert [r.parent_id for r in rows] == [None, 1, 2, 2]
        status = run_status(store)
        assert status.best_score == 60.0 and status.best_id == 4 and status.llm_calls == 3
        assert store.runs.info().framework == "shinkaevolve"
    finally:
        store.close()
    original = analyse_cycling(load_trace(folder)).to_dict()
    assert analyse_cycling(load_trace(run_dir)).to_dict() == original


def _openevolve_program(pid: str, iteration: int, parent: str | None, metrics: dict,
                        code: str, **extra: object) -> dict[str, object]:
    return {"id": pid, "code": code, "language": "python", "parent_id": parent,
            "generation": 0 if parent is None else 1, "timestamp": 1_700_000_000.0 + iteration,
            "iteration_found": iteration, "metrics": metrics, "complexity": len(code),
            "diversity": 0.0, "metadata": {"island": 0}, "prompts": None,
            "artifacts_json": None, "artifact_dir": None, "embedding": None, **extra}


def make_openevolve_output(folder: Path) -> Path:
    seed = "def run():\n    return 1\n"
    programs = [
        _openevolve_program("p-a", 0, None, {"combined_score": 1.0, "runs": 3}, seed),
        _openevolve_program(
            "p-b", 2, "p-a", {"combined_score": 2.0}, seed.replace("1", "2"),
            changes_description="return two",
            prompts={"diff_user": {"system": "You evolve code.", "user": "Improve run()",
                                   "responses": ["<<<<<<< SEARCH\n    return 1\n=======\n"
                                                 "    return 2\n>>>>>>> REPLACE"]}},
            artifacts_json=json.dumps({"stderr": ""})),
        _openevolve_program("p-c", 4, "p-b", {"error": 0.0}, "def run(:\n"),
        _openevolve_program("p-d", 3, "p-a", {"accuracy": 0.5, "speed": 1.5},
                            seed.replace("1", "1.0")),
    ]
    for number, kept in ((2, programs[:1]), (4, programs)):
        checkpoint = folder / "checkpoints" / f"checkpoint_{number}"
        (checkpoint / "programs").mkdir(parents=True)
        (checkpoint / "metadata.json").write_text(json.dumps({
            "islands": [[p["id"] for p in kept]], "archive": [], "best_program_id": "p-b",
            "last_iteration": number, "current_island": 0, "island_generations": [number]}))
        for program in kept:
            (checkpoint / "programs" / f"{program['id']}.json").write_text(json.dumps(program))
    return folder


def test_openevolve_latest_checkpoint_becomes_a_trace(tmp_path: Path):
    output = make_openevolve_output(tmp_path / "openevolve_output")
    assert detect_format(output) == "openevolve"
    trace = load_trace(output)
    assert trace.run.config["checkpoint"] == "checkpoint_4"
    assert trace.run.task == "openevolve_output"
    assert [c.id for c in trace.candidates] == ["p-a", "p-b", "p-d", "p-c"]  # by iteration
    scores = {c.id: (c.status, c.score) for c in trace.candidates}
    assert scores == {"p-a": ("correct", 1.0), "p-b": ("correct", 2.0),
                      "p-c": ("incorrect", None), "p-d": ("correct", 1.0)}  # mean of metrics
    b = trace.candidate("p-b")
    assert b.description == "return two" and b.context_id == "p-b:diff_user"
    context = trace.contexts[0]
    assert context.messages[1] == {"role": "user", "content": "Improve run()"}
    assert "REPLACE" in (context.response_text or "")
    static = analyse_static(trace)
    assert static.best_id == "p-b" and static.lineage_depth == 1
    assert static.normalised_best_iteration == pytest.approx(2 / 4)
    assert static.dead_branch_share == pytest.approx(2 / 3)  # p-d and p-c
    # A single checkpoint folder is read directly as well.
    single = load_trace(output / "checkpoints" / "checkpoint_2")
    assert [c.id for c in single.candidates] == ["p-a"]


def test_openevolve_import_to_store(tmp_path: Path):
    output = make_openevolve_output(tmp_path / "out")
    store = Store.open(import_to_store(output, tmp_path / "imported"))
    try:
        assert run_status(store).best_score == 2.0
        assert store.candidates.count("incorrect") == 1
    finally:
        store.close()


def test_unknown_folder_is_a_clear_error(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UnknownTraceFormat, match="no known trace"):
        load_trace(tmp_path / "empty")
    with pytest.raises(FileNotFoundError):
        load_trace(tmp_path / "missing")
