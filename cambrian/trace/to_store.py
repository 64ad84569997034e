"""Rebuild a Cambrian run store from any readable trace (an export, ShinkaEvolve, OpenEvolve).

Rows are written with their original ids and timestamps, so a Cambrian run exported, imported
and exported again gives byte-identical tables. Foreign string ids (UUIDs) are renumbered in
time order, parents first, and the original id is kept in the candidate's notes as
``trace_id``. The store's typed writes assign fresh ids and clocks, so rows go in through its
raw-rows access (``cambrian/store/raw_rows.py``) instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cambrian.store.store import STORE_FILENAME, Store
from cambrian.task.program_files import is_bundle
from cambrian.trace.loading import load_trace
from cambrian.trace.model import Trace
from cambrian.trace.resumable import make_resumable, provenance

PEER_FRAMEWORKS = ("shinkaevolve", "openevolve")


def _dumps(value: Any) -> str:
    # The encoding the store itself uses, so re-reading yields identical JSON.
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _numbering(ids: list[str]) -> dict[str, int]:
    """Keep decimal ids as they are; renumber 1..n otherwise (ids given in insertion order)."""
    if all(i.isdigit() for i in ids) and len(set(ids)) == len(ids):
        return {i: int(i) for i in ids}
    return {original: index for index, original in enumerate(ids, start=1)}


def _parent_first(trace: Trace) -> list[str]:
    """Candidate ids ordered so that every parent precedes its children."""
    ordered: list[str] = []
    placed: set[str] = set()
    for candidate in trace.in_time_order():
        chain = [candidate.id, *trace.ancestors(candidate.id)]
        for candidate_id in reversed(chain):
            if candidate_id not in placed:
                placed.add(candidate_id)
                ordered.append(candidate_id)
    return ordered


def import_to_store(source: Trace | str | Path, run_dir: str | Path,
                    task_dir: str | Path | None = None) -> Path:
    """Create ``run_dir/run.sqlite`` from ``source`` (a trace, or any path ``load_trace`` reads).

    A peer's run (ShinkaEvolve, OpenEvolve) becomes one ``cambrian resume`` continues: its task
    folder (``task_dir``, else found beside the peer's results) and the configuration that
    folder gives are recorded (``resumable.py``), where it came from kept in the store's meta.
    Refuses to overwrite an existing run store. Returns the run directory.
    """
    trace = source if isinstance(source, Trace) else load_trace(source)
    origin = {}
    if trace.run.framework in PEER_FRAMEWORKS:
        origin = provenance(trace)
        trace = make_resumable(trace, Path(task_dir) if task_dir is not None else None)
    target = Path(run_dir)
    if (target / STORE_FILENAME).exists():
        raise FileExistsError(f"{target} already holds a run store")
    store = Store.open(target, create=True)
    try:
        with store.transaction():
            _write(store, trace)
            for key, value in origin.items():
                store.meta.set(key, value)
    except BaseException:
        store.close()
        # Leave no half-made store behind: it would block a corrected retry.
        for suffix in ("", "-wal", "-shm"):
            (target / f"{STORE_FILENAME}{suffix}").unlink(missing_ok=True)
        raise
    store.close()
    return target


def _write(store: Store, trace: Trace) -> None:
    run = trace.run
    store.raw.insert("runs", {
        "id": run.id, "created_at": run.created_at, "task_name": run.task,
        "task_dir": run.task_dir, "direction": run.direction, "language": run.language,
        "config_json": _dumps(run.config), "seed": run.seed if run.seed is not None else 0,
        "code_version": run.code_version, "framework": run.framework})
    if run.program_filename:
        store.meta.set("program_filename", run.program_filename)

    environment_ids = _numbering([e.id for e in trace.environments])
    for environment in sorted(trace.environments, key=lambda e: environment_ids[e.id]):
        store.raw.insert("environments", {
            "id": environment_ids[environment.id], "evaluator": environment.evaluator,
            "contract": environment.contract, "command": environment.command,
            "limits_json": _dumps(environment.limits),
            "toolchain_json": _dumps(environment.toolchain),
            "file_hashes_json": _dumps(environment.file_hashes),
            "created_at": environment.created_at})

    context_ids = _numbering([c.id for c in trace.contexts])
    for context in sorted(trace.contexts, key=lambda c: context_ids[c.id]):
        parent = context_ids.get(context.parent_context_id) if context.parent_context_id else None
        store.raw.insert("contexts", {
            "id": context_ids[context.id], "purpose": context.purpose, "model": context.model,
            "provider": context.provider, "params_json": _dumps(context.params),
            "messages_json": _dumps(context.messages), "response_text": context.response_text,
            "finish_reason": context.finish_reason, "prompt_tokens": context.prompt_tokens,
            "completion_tokens": context.completion_tokens,
            "cached_tokens": context.cached_tokens, "cost_usd": context.cost_usd,
            "latency_s": context.latency_s, "error": context.error,
            "parent_context_id": parent, "created_at": context.created_at})

    order = _parent_first(trace)
    candidate_ids = _numbering(order)
    renumbered = any(str(candidate_ids[i]) != i for i in order)
    for candidate_id in sorted(order, key=lambda i: candidate_ids[i]):
        candidate = trace.candidate(candidate_id)
        several = candidate.source is not None and is_bundle(candidate.source)
        notes = dict(candidate.notes)
        if renumbered:
            notes["trace_id"] = candidate.id
        parent_id = trace.parent_of(candidate.id)
        store.raw.insert("candidates", {
            "id": candidate_ids[candidate.id], "generation": candidate.iteration,
            "island": candidate.island,
            "parent_id": candidate_ids[parent_id] if parent_id is not None else None,
            "operator": candidate.operator,
            "status": candidate.status.value,
            "source": None if several else candidate.source,
            "source_hash": candidate.source_sha256,
            "language": candidate.language, "description": candidate.description,
            "model": candidate.model,
            "context_id": context_ids.get(candidate.context_id) if candidate.context_id else None,
            "score": candidate.score, "error": candidate.error, "notes_json": _dumps(notes),
            "created_at": candidate.created_at})
        if several:  # kept as its files, each text once (store/blobs.py)
            store.candidates.put_files(candidate_ids[candidate.id], candidate.source or "")

    evaluation_ids = _numbering([e.id for e in trace.evaluations])
    for evaluation in sorted(trace.evaluations, key=lambda e: evaluation_ids[e.id]):
        if evaluation.candidate_id not in candidate_ids:
            continue
        store.raw.insert("evaluations", {
            "id": evaluation_ids[evaluation.id],
            "candidate_id": candidate_ids[evaluation.candidate_id], "stage": evaluation.stage,
            "status": evaluation.status, "combined_score": evaluation.combined_score,
            "public_json": _dumps(evaluation.public), "private_json": _dumps(evaluation.private),
            "text_feedback": evaluation.text_feedback, "error": evaluation.error,
            "stdout": evaluation.stdout, "stderr": evaluation.stderr,
            "duration_s": evaluation.duration_s, "extra_json": _dumps(evaluation.extra),
            "created_at": evaluation.created_at})

    for edge in trace.edges:
        if edge.parent_id in candidate_ids and edge.child_id in candidate_ids:
            store.raw.insert("edges", {
                "parent_id": candidate_ids[edge.parent_id],
                "child_id": candidate_ids[edge.child_id], "kind": edge.kind,
                "operator": edge.operator}, ignore_duplicates=True)
