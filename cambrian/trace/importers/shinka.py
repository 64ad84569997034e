"""Read a ShinkaEvolve results folder (its ``programs.sqlite``) into a trace.

Shape read (ShinkaEvolve ``programs`` table): ``id, code, language, parent_id,
archive_inspiration_ids, top_k_inspiration_ids, generation, timestamp, combined_score,
public_metrics, private_metrics, text_feedback, correct, metadata, island_idx`` (JSON columns as
text). ``metadata`` carries the patch type and name, the model, costs, the LLM call
(``llm_result``: system message, user message, reply, tokens, cost) and the evaluator logs; a
child without ``llm_result`` still had its call, recorded from its model and ``api_costs``.
Columns that a given ShinkaEvolve version lacks are simply skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cambrian.store.foreign import read_table
from cambrian.trace.importers.common import as_text, clean, finite_or_none, parse_json
from cambrian.trace.model import (
    CandidateRecord,
    ContextRecord,
    EdgeRecord,
    EvaluationRecord,
    RunRecord,
    Trace,
)

FRAMEWORK = "shinkaevolve"
# Bulky metadata already carried by the evaluation and context rows.
_MOVED_KEYS = ("llm_result", "stdout_log", "stderr_log")
# Island copies: the flag and the original's id, by ShinkaEvolve version.
_COPY_FLAG, _SPAWN_FLAG = "_is_island_copy", "_spawned_island"
_ORIGINAL_KEYS = ("_original_program_id", "_original_repo_id", "_spawned_from_program_id",
                  "_spawned_from_repo_id")


def read_shinka_results(path: str | Path) -> Trace:
    path = Path(path)
    db_file = path if path.is_file() else path / "programs.sqlite"
    rows = read_table(db_file, "programs")
    rows.sort(key=lambda r: (int(r.get("generation") or 0), r.get("timestamp") or 0.0,
                             str(r["id"])))
    rows, aliases = _fold_copies(rows)
    candidates: list[CandidateRecord] = []
    evaluations: list[EvaluationRecord] = []
    edges: list[EdgeRecord] = []
    contexts: list[ContextRecord] = []
    for row in rows:
        candidate, evaluation, context = _program(row, aliases)
        candidates.append(candidate)
        evaluations.append(evaluation)
        if context is not None:
            contexts.append(context)
        edges.extend(_edges(row, candidate, aliases))
    folder = db_file.parent
    generations = max((c.iteration for c in candidates), default=0)
    run = RunRecord(
        id=f"{FRAMEWORK}-{candidates[0].id}" if candidates else FRAMEWORK,
        task=folder.name, framework=FRAMEWORK, direction="maximize",
        language=candidates[0].language if candidates else "python",
        config={"evolution": {"generations": generations}, "imported_from": FRAMEWORK,
                **_run_metadata(db_file)},
        task_dir="", created_at=min((c.created_at for c in candidates), default=0.0),
    )
    return Trace(run=run, candidates=candidates, evaluations=evaluations, edges=edges,
                 contexts=contexts, origin=folder)


def _run_metadata(db_file: Path) -> dict[str, Any]:
    """ShinkaEvolve's own record of the run (``metadata_store``): its best program's id and
    last generation, where the file has them."""
    try:
        rows = read_table(db_file, "metadata_store")
    except Exception:  # noqa: BLE001 - an older file without the table, or unreadable
        return {}
    found = {str(r.get("key")): r.get("value") for r in rows}
    out: dict[str, Any] = {}
    if found.get("best_program_id") not in (None, "", "None"):
        out["best_program_id"] = str(found["best_program_id"])
    if str(found.get("last_iteration") or "").isdigit():
        out["last_iteration"] = int(str(found["last_iteration"]))
    return out


def _fold_copies(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """ShinkaEvolve copies the initial program onto every other island (and a program onto a
    spawned island): rows with the same code that were never proposed or evaluated again.
    They are left out (ShinkaEvolve's own counts of children leave them out too); a child of a
    copy is the child of the original."""
    kept: list[dict[str, Any]] = []
    aliases: dict[str, str] = {}
    for row in rows:
        metadata = parse_json(row.get("metadata"), {})
        original = None
        if isinstance(metadata, dict) and (metadata.get(_COPY_FLAG)
                                           or metadata.get(_SPAWN_FLAG)):
            original = next((metadata[key] for key in _ORIGINAL_KEYS if metadata.get(key)), None)
        if original:
            aliases[str(row["id"])] = str(original)
        else:
            kept.append(row)
    for copy, original in list(aliases.items()):  # a copy of a copy
        while original in aliases and aliases[original] != copy:
            original = aliases[original]
        aliases[copy] = original
    return kept, aliases


def _program(row: dict[str, Any], aliases: dict[str, str]) -> tuple[
        CandidateRecord, EvaluationRecord, ContextRecord | None]:
    program_id = str(row["id"])
    metadata = clean(parse_json(row.get("metadata"), {}))
    if not isinstance(metadata, dict):
        metadata = {}
    llm_result = metadata.get("llm_result")
    if not isinstance(llm_result, dict):
        llm_result = None
    parent_id = str(row["parent_id"]) if row.get("parent_id") else None
    parent_id = aliases.get(parent_id, parent_id) if parent_id is not None else None
    correct = bool(row.get("correct"))
    score = finite_or_none(row.get("combined_score"))
    model = metadata.get("model_name") or (llm_result or {}).get("model_name")
    if llm_result:
        context: ContextRecord | None = _context(program_id, llm_result, row)
    elif parent_id is not None:  # a child came from a call whose messages were not kept
        context = _bare_context(program_id, metadata, row)
    else:
        context = None
    notes = {k: v for k, v in metadata.items() if k not in _MOVED_KEYS}
    if row.get("complexity") is not None:
        notes["complexity"] = finite_or_none(row.get("complexity"))
    candidate = CandidateRecord(
        id=program_id,
        iteration=int(row.get("generation") or 0),
        parent_id=parent_id,
        status="correct" if correct else "incorrect",
        source=row.get("code") or "",
        language=row.get("language") or "python",
        operator=str(metadata.get("patch_type") or ("init" if parent_id is None else "mutation")),
        island=int(row["island_idx"]) if row.get("island_idx") is not None else None,
        description=as_text(metadata.get("patch_name") or metadata.get("patch_description")),
        model=str(model) if model else None,
        context_id=context.id if context else None,
        score=score,
        error="" if correct else as_text(metadata.get("error_attempt") or ""),
        notes=notes,
        created_at=float(row.get("timestamp") or 0.0),
    )
    evaluation = EvaluationRecord(
        id=f"{program_id}:main",
        candidate_id=program_id,
        stage="main",
        status="ok" if correct else "incorrect",
        combined_score=score,
        public=clean(parse_json(row.get("public_metrics"), {})) or {},
        private=clean(parse_json(row.get("private_metrics"), {})) or {},
        text_feedback=_feedback(row.get("text_feedback")),
        stdout=as_text(metadata.get("stdout_log")),
        stderr=as_text(metadata.get("stderr_log")),
        duration_s=finite_or_none(metadata.get("compute_time")) or 0.0,
        created_at=float(row.get("timestamp") or 0.0),
    )
    return candidate, evaluation, context


def _feedback(value: Any) -> str:
    """ShinkaEvolve's feedback is a string or a list of strings (stored as JSON text)."""
    if isinstance(value, str) and value.startswith("["):
        parsed = parse_json(value, None)
        if isinstance(parsed, list):
            return as_text(parsed)
    return as_text(value)


def _context(program_id: str, llm_result: dict[str, Any], row: dict[str, Any]) -> ContextRecord:
    messages = []
    if llm_result.get("system_msg"):
        messages.append({"role": "system", "content": as_text(llm_result["system_msg"])})
    messages.append({"role": "user", "content": as_text(llm_result.get("msg"))})
    response = llm_result.get("content")
    kwargs = llm_result.get("kwargs")
    return ContextRecord(
        id=f"{program_id}:llm",
        purpose="mutation",
        model=str(llm_result.get("model_name") or "unknown"),
        provider=FRAMEWORK,
        params=kwargs if isinstance(kwargs, dict) else {},
        messages=messages,
        response_text=as_text(response) if response is not None else None,
        prompt_tokens=int(llm_result.get("input_tokens") or 0),
        completion_tokens=int(llm_result.get("output_tokens") or 0),
        cost_usd=finite_or_none(llm_result.get("cost")) or 0.0,
        created_at=float(row.get("timestamp") or 0.0),
    )


def _bare_context(program_id: str, metadata: dict[str, Any],
                  row: dict[str, Any]) -> ContextRecord:
    """The call that proposed a child, from what ShinkaEvolve kept of it (model and cost)
    when its messages were not kept: so the imported run counts the calls and the cost the
    peer's own run made (a resumed run's budget includes them)."""
    return ContextRecord(
        id=f"{program_id}:llm", purpose="mutation",
        model=str(metadata.get("model_name") or "unknown"), provider=FRAMEWORK,
        messages=[], response_text=None,
        cost_usd=finite_or_none(metadata.get("api_costs")) or 0.0,
        error="", created_at=float(row.get("timestamp") or 0.0))


def _edges(row: dict[str, Any], candidate: CandidateRecord,
           aliases: dict[str, str]) -> list[EdgeRecord]:
    edges = []
    if candidate.parent_id is not None:
        edges.append(EdgeRecord(candidate.parent_id, candidate.id, "parent", candidate.operator))
    seen = {candidate.parent_id}
    for column in ("archive_inspiration_ids", "top_k_inspiration_ids"):
        for inspiration in parse_json(row.get(column), []) or []:
            inspiration = aliases.get(str(inspiration), str(inspiration)) if inspiration \
                else None
            if inspiration and inspiration not in seen and inspiration != candidate.id:
                seen.add(inspiration)
                edges.append(EdgeRecord(inspiration, candidate.id, "inspiration",
                                        candidate.operator))
    return edges
