"""Read an OpenEvolve checkpoint folder into a trace.

Shape read: ``checkpoint_N/metadata.json`` (islands, archive, ``best_program_id``,
``last_iteration``...) and ``checkpoint_N/programs/<id>.json``, each with ``id, code, language,
parent_id, generation, timestamp, iteration_found, metrics`` (``combined_score`` among them),
``metadata`` (``island``, ``changes``...), ``prompts`` (``{template: {system, user, responses}}``)
and optionally ``changes_description`` and ``artifacts_json``. A checkpoint holds the population
OpenEvolve kept, not every program it ever proposed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cambrian.trace.importers.common import as_text, clean, finite_or_none, parse_json
from cambrian.trace.model import (
    CandidateRecord,
    ContextRecord,
    EdgeRecord,
    EvaluationRecord,
    RunRecord,
    Trace,
)

FRAMEWORK = "openevolve"
_CHECKPOINT = re.compile(r"checkpoint_(\d+)$")


def _is_checkpoint(path: Path) -> bool:
    return (path / "programs").is_dir() and (
        (path / "metadata.json").exists() or any((path / "programs").glob("*.json"))
    )


def find_checkpoint(path: Path) -> Path | None:
    """``path`` itself if it is a checkpoint, else its latest ``checkpoint_N`` (also looked for
    under ``checkpoints/``)."""
    if _is_checkpoint(path):
        return path
    found: list[tuple[int, Path]] = []
    for folder in (path, path / "checkpoints"):
        if not folder.is_dir():
            continue
        for child in folder.iterdir():
            match = _CHECKPOINT.match(child.name)
            if match and child.is_dir() and _is_checkpoint(child):
                found.append((int(match.group(1)), child))
    return max(found)[1] if found else None


def _fitness(metrics: dict[str, Any]) -> float | None:
    """OpenEvolve's rule: ``combined_score``, else the mean of the numeric metrics."""
    if "combined_score" in metrics:
        return finite_or_none(metrics["combined_score"])
    values = [finite_or_none(v) for k, v in metrics.items() if k != "error"]
    numeric = [v for v in values if v is not None]
    return sum(numeric) / len(numeric) if numeric else None


def read_openevolve_checkpoint(path: str | Path) -> Trace:
    checkpoint = find_checkpoint(Path(path))
    if checkpoint is None:
        raise FileNotFoundError(f"no OpenEvolve checkpoint in {path}")
    meta_file = checkpoint / "metadata.json"
    metadata = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.exists() else {}
    programs = [json.loads(p.read_text(encoding="utf-8"))
                for p in sorted((checkpoint / "programs").glob("*.json"))]
    programs.sort(key=lambda p: (int(p.get("iteration_found") or 0), p.get("timestamp") or 0.0,
                                 str(p["id"])))
    candidates: list[CandidateRecord] = []
    evaluations: list[EvaluationRecord] = []
    contexts: list[ContextRecord] = []
    edges: list[EdgeRecord] = []
    for program in programs:
        candidate, evaluation, program_contexts = _program(program)
        candidates.append(candidate)
        evaluations.append(evaluation)
        contexts.extend(program_contexts)
        if candidate.parent_id is not None:
            edges.append(EdgeRecord(candidate.parent_id, candidate.id, "parent",
                                    candidate.operator))
    output = checkpoint.parent.parent if checkpoint.parent.name == "checkpoints" \
        else checkpoint.parent
    last_iteration = int(metadata.get("last_iteration") or
                         max((c.iteration for c in candidates), default=0))
    run = RunRecord(
        id=f"{FRAMEWORK}-{candidates[0].id}" if candidates else FRAMEWORK,
        task=output.name, framework=FRAMEWORK, direction="maximize",
        language=candidates[0].language if candidates else "python",
        config={"evolution": {"generations": last_iteration}, "imported_from": FRAMEWORK,
                "checkpoint": checkpoint.name,
                "best_program_id": metadata.get("best_program_id")},
        created_at=min((c.created_at for c in candidates), default=0.0),
    )
    return Trace(run=run, candidates=candidates, evaluations=evaluations, edges=edges,
                 contexts=contexts, origin=checkpoint)


def _program(program: dict[str, Any]) -> tuple[CandidateRecord, EvaluationRecord,
                                                list[ContextRecord]]:
    program_id = str(program["id"])
    metrics = clean(program.get("metrics") or {})
    metadata = clean(program.get("metadata") or {})
    score = _fitness(metrics)
    failed = score is None or ("error" in metrics and "combined_score" not in metrics)
    parent_id = str(program["parent_id"]) if program.get("parent_id") else None
    created_at = float(program.get("timestamp") or 0.0)
    contexts = []
    for key, prompt in sorted((program.get("prompts") or {}).items()):
        if not isinstance(prompt, dict):
            continue
        messages = [{"role": "system", "content": as_text(prompt.get("system"))},
                    {"role": "user", "content": as_text(prompt.get("user"))}]
        responses = prompt.get("responses") or []
        contexts.append(ContextRecord(
            id=f"{program_id}:{key}", purpose=str(key),
            model=str(metadata.get("model") or "unknown"), provider=FRAMEWORK,
            messages=messages, response_text=as_text(responses[0]) if responses else None,
            created_at=created_at,
        ))
    description = program.get("changes_description") or metadata.get("changes") or ""
    notes = {k: v for k, v in metadata.items() if k != "island"}
    for feature in ("complexity", "diversity"):
        if program.get(feature) is not None:
            notes[feature] = finite_or_none(program.get(feature))
    island = metadata.get("island")
    candidate = CandidateRecord(
        id=program_id,
        iteration=int(program.get("iteration_found") or 0),
        parent_id=parent_id,
        status="incorrect" if failed else "correct",
        source=program.get("code") or "",
        language=program.get("language") or "python",
        operator="init" if parent_id is None else "mutation",
        island=int(island) if isinstance(island, int) else None,
        description=as_text(description),
        model=str(metadata["model"]) if metadata.get("model") else None,
        context_id=contexts[0].id if contexts else None,
        score=score,
        error=as_text(metrics.get("error")) if failed and "error" in metrics else "",
        notes=notes,
        created_at=created_at,
    )
    artifacts = parse_json(program.get("artifacts_json"), None)
    evaluation = EvaluationRecord(
        id=f"{program_id}:main", candidate_id=program_id, stage="main",
        status="incorrect" if failed else "ok", combined_score=score,
        public={k: v for k, v in metrics.items()},
        extra={"artifacts": clean(artifacts)} if artifacts else {},
        created_at=created_at,
    )
    return candidate, evaluation, contexts
