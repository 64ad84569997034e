"""Rebuild a Cambrian run store from any readable trace (an export, ShinkaEvolve, OpenEvolve).

Rows are written with their original ids and timestamps, so a Cambrian run exported, imported
and exported again gives byte-identical tables. Foreign string ids (UUIDs) are renumbered in
time order, parents first, and the original id is kept in the candidate's notes as
``trace_id``. The store's ``Store`` API assigns fresh ids and clocks, so rows go in through
plain INSERTs against the store schema instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cambrian.store.store import STORE_FILENAME, Store
from cambrian.trace.model import STATUSES, Trace, load_trace


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


def import_to_store(source: Trace | str | Path, run_dir: str | Path) -> Path:
    """Create ``run_dir/run.sqlite`` from ``source`` (a trace, or any path ``load_trace`` reads).

    Refuses to overwrite an existing run store. Returns the run directory.
    """
    trace = source if isinstance(source, Trace) else load_trace(source)
    target = Path(run_dir)
    if (target / STORE_FILENAME).exists():
        raise FileExistsError(f"{target} already holds a run store")
    store = Store.open(target, create=True)
    try:
        with store.transaction():
            _write(store, trace)
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
    store.execute(
        "INSERT INTO runs(id, created_at, task_name, task_dir, direction, language, config_json, "
        "seed, code_version, framework) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (run.id, run.created_at, run.task, run.task_dir, run.direction, run.language,
         _dumps(run.config), run.seed if run.seed is not None else 0, run.code_version,
         run.framework),
    )
    if run.program_filename:
        store.set_meta("program_filename", run.program_filename)

    environment_ids = _numbering([e.id for e in trace.environments])
    for environment in sorted(trace.environments, key=lambda e: environment_ids[e.id]):
        store.execute(
            "INSERT INTO environments(id, evaluator, contract, command, limits_json, "
            "toolchain_json, file_hashes_json, created_at) VALUES (?,?,?,?,?,?,?,?)",
            (environment_ids[environment.id], environment.evaluator, environment.contract,
             environment.command, _dumps(environment.limits), _dumps(environment.toolchain),
             _dumps(environment.file_hashes), environment.created_at),
        )

    context_ids = _numbering([c.id for c in trace.contexts])
    for context in sorted(trace.contexts, key=lambda c: context_ids[c.id]):
        parent = context_ids.get(context.parent_context_id) if context.parent_context_id else None
        store.execute(
            "INSERT INTO contexts(id, purpose, model, provider, params_json, messages_json, "
            "response_text, finish_reason, prompt_tokens, completion_tokens, cached_tokens, "
            "cost_usd, latency_s, error, parent_context_id, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (context_ids[context.id], context.purpose, context.model, context.provider,
             _dumps(context.params), _dumps(context.messages), context.response_text,
             context.finish_reason, context.prompt_tokens, context.completion_tokens,
             context.cached_tokens, context.cost_usd, context.latency_s, context.error, parent,
             context.created_at),
        )

    order = _parent_first(trace)
    candidate_ids = _numbering(order)
    renumbered = any(str(candidate_ids[i]) != i for i in order)
    for candidate_id in sorted(order, key=lambda i: candidate_ids[i]):
        candidate = trace.candidate(candidate_id)
        notes = dict(candidate.notes)
        if renumbered:
            notes["trace_id"] = candidate.id
        parent_id = trace.parent_of(candidate.id)
        store.execute(
            "INSERT INTO candidates(id, generation, island, parent_id, operator, status, source, "
            "source_hash, language, description, model, context_id, score, error, notes_json, "
            "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (candidate_ids[candidate.id], candidate.iteration, candidate.island,
             candidate_ids[parent_id] if parent_id is not None else None, candidate.operator,
             candidate.status if candidate.status in STATUSES else "incorrect", candidate.source,
             candidate.source_sha256, candidate.language, candidate.description, candidate.model,
             context_ids.get(candidate.context_id) if candidate.context_id else None,
             candidate.score, candidate.error, _dumps(notes), candidate.created_at),
        )

    evaluation_ids = _numbering([e.id for e in trace.evaluations])
    for evaluation in sorted(trace.evaluations, key=lambda e: evaluation_ids[e.id]):
        if evaluation.candidate_id not in candidate_ids:
            continue
        store.execute(
            "INSERT INTO evaluations(id, candidate_id, stage, status, combined_score, "
            "public_json, private_json, text_feedback, error, stdout, stderr, duration_s, "
            "extra_json, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (evaluation_ids[evaluation.id], candidate_ids[evaluation.candidate_id],
             evaluation.stage, evaluation.status, evaluation.combined_score,
             _dumps(evaluation.public), _dumps(evaluation.private), evaluation.text_feedback,
             evaluation.error, evaluation.stdout, evaluation.stderr, evaluation.duration_s,
             _dumps(evaluation.extra), evaluation.created_at),
        )

    for edge in trace.edges:
        if edge.parent_id in candidate_ids and edge.child_id in candidate_ids:
            store.execute(
                "INSERT OR IGNORE INTO edges(parent_id, child_id, kind, operator) "
                "VALUES (?,?,?,?)",
                (candidate_ids[edge.parent_id], candidate_ids[edge.child_id], edge.kind,
                 edge.operator),
            )
