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


def _json(value: str | None) -> object:
    return json.loads(value) if value else None


def _read(store: Store) -> Trace:
    info = store.runs.info()
    run = RunRecord(
        id=info.id, task=info.task_name, framework=info.framework, direction=info.direction,
        language=info.language, config=info.config, seed=info.seed,
        code_version=info.code_version, task_dir=info.task_dir, created_at=info.created_at,
        program_filename=store.meta.get("program_filename"),
    )
    rows = store.raw.read("candidates", order_by="id")
    # A program of several files is kept as its files (store/blobs.py).
    bundles = store.candidates.blobs.bundles(
        [r["id"] for r in rows if r["source"] is None and r["source_hash"] is not None])
    candidates = [
        CandidateRecord(
            id=str(r["id"]), iteration=r["generation"], island=r["island"],
            parent_id=_id(r["parent_id"]), operator=r["operator"], status=r["status"],
            source=r["source"] if r["source"] is not None else bundles.get(r["id"]),
            language=r["language"], description=r["description"],
            model=r["model"], context_id=_id(r["context_id"]), score=r["score"],
            error=r["error"], notes=_json(r["notes_json"]), created_at=r["created_at"],
        )
        for r in rows
    ]
    evaluations = [
        EvaluationRecord(
            id=str(r["id"]), candidate_id=str(r["candidate_id"]), stage=r["stage"],
            status=r["status"], combined_score=r["combined_score"], public=_json(r["public_json"]),
            private=_json(r["private_json"]), text_feedback=r["text_feedback"], error=r["error"],
            stdout=r["stdout"], stderr=r["stderr"], duration_s=r["duration_s"],
            extra=_json(r["extra_json"]), created_at=r["created_at"],
        )
        for r in store.raw.read("evaluations", order_by="id")
    ]
    edges = [
        EdgeRecord(parent_id=str(r["parent_id"]), child_id=str(r["child_id"]), kind=r["kind"],
                   operator=r["operator"])
        for r in store.raw.read("edges")
    ]
    contexts = [
        ContextRecord(
            id=str(r["id"]), purpose=r["purpose"], model=r["model"], provider=r["provider"],
            params=_json(r["params_json"]), messages=_json(r["messages_json"]),
            response_text=r["response_text"], finish_reason=r["finish_reason"],
            prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"],
            cached_tokens=r["cached_tokens"], cost_usd=r["cost_usd"], latency_s=r["latency_s"],
            error=r["error"], parent_context_id=_id(r["parent_context_id"]),
            created_at=r["created_at"],
        )
        for r in store.raw.read("contexts", order_by="id")
    ]
    environments = [
        EnvironmentRecord(
            id=str(r["id"]), evaluator=r["evaluator"], contract=r["contract"],
            command=r["command"], limits=_json(r["limits_json"]),
            toolchain=_json(r["toolchain_json"]), file_hashes=_json(r["file_hashes_json"]),
            created_at=r["created_at"],
        )
        for r in store.raw.read("environments", order_by="id")
    ]
    return Trace(run=run, candidates=candidates, evaluations=evaluations, edges=edges,
                 contexts=contexts, environments=environments)
