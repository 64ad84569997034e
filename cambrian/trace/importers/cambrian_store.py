"""Read a Cambrian run store (``RUN_DIR/run.sqlite``) into a trace."""

from __future__ import annotations

import json
from pathlib import Path

from cambrian.store.store import Store
from cambrian.trace.model import (
    CandidateRecord,
    ContextRecord,
    EdgeRecord,
    EnvironmentRecord,
    EvaluationRecord,
    RunRecord,
    Trace,
)


def _id(value: int | None) -> str | None:
    return None if value is None else str(value)


def read_cambrian_run(path: str | Path) -> Trace:
    path = Path(path)
    store = Store.open(path)
    try:
        trace = _read(store)
    finally:
        store.close()
    trace.origin = path.parent if path.suffix == ".sqlite" else path
    return trace


def _read(store: Store) -> Trace:
    info = store.run_info()
    run = RunRecord(
        id=info["id"], task=info["task_name"], framework=info["framework"],
        direction=info["direction"], language=info["language"], config=info["config"],
        seed=info["seed"], code_version=info["code_version"], task_dir=info["task_dir"],
        created_at=info["created_at"], program_filename=store.get_meta("program_filename"),
    )
    candidates = [
        CandidateRecord(
            id=str(row[0]), iteration=row[1], island=row[2], parent_id=_id(row[3]),
            operator=row[4], status=row[5], source=row[6], language=row[7], description=row[8],
            model=row[9], context_id=_id(row[10]), score=row[11], error=row[12],
            notes=json.loads(row[13]), created_at=row[14],
        )
        for row in store.execute(
            "SELECT id, generation, island, parent_id, operator, status, source, language, "
            "description, model, context_id, score, error, notes_json, created_at "
            "FROM candidates ORDER BY id"
        )
    ]
    evaluations = [
        EvaluationRecord(
            id=str(row[0]), candidate_id=str(row[1]), stage=row[2], status=row[3],
            combined_score=row[4], public=json.loads(row[5]), private=json.loads(row[6]),
            text_feedback=row[7], error=row[8], stdout=row[9], stderr=row[10],
            duration_s=row[11], extra=json.loads(row[12]), created_at=row[13],
        )
        for row in store.execute(
            "SELECT id, candidate_id, stage, status, combined_score, public_json, private_json, "
            "text_feedback, error, stdout, stderr, duration_s, extra_json, created_at "
            "FROM evaluations ORDER BY id"
        )
    ]
    edges = [
        EdgeRecord(parent_id=str(p), child_id=str(c), kind=k, operator=o)
        for p, c, k, o in store.execute(
            "SELECT parent_id, child_id, kind, operator FROM edges ORDER BY rowid"
        )
    ]
    contexts = [
        ContextRecord(
            id=str(row[0]), purpose=row[1], model=row[2], provider=row[3],
            params=json.loads(row[4]), messages=json.loads(row[5]), response_text=row[6],
            finish_reason=row[7], prompt_tokens=row[8], completion_tokens=row[9],
            cached_tokens=row[10], cost_usd=row[11], latency_s=row[12], error=row[13],
            parent_context_id=_id(row[14]), created_at=row[15],
        )
        for row in store.execute(
            "SELECT id, purpose, model, provider, params_json, messages_json, response_text, "
            "finish_reason, prompt_tokens, completion_tokens, cached_tokens, cost_usd, latency_s, "
            "error, parent_context_id, created_at FROM contexts ORDER BY id"
        )
    ]
    environments = [
        EnvironmentRecord(
            id=str(row[0]), evaluator=row[1], contract=row[2], command=row[3],
            limits=json.loads(row[4]), toolchain=json.loads(row[5]),
            file_hashes=json.loads(row[6]), created_at=row[7],
        )
        for row in store.execute(
            "SELECT id, evaluator, contract, command, limits_json, toolchain_json, "
            "file_hashes_json, created_at FROM environments ORDER BY id"
        )
    ]
    return Trace(run=run, candidates=candidates, evaluations=evaluations, edges=edges,
                 contexts=contexts, environments=environments)
