"""Run → export → import → export: identical tables, identical analyses, a working store."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from trace_builders import LINEAGE_RUN, build_run

from cambrian.api import start
from cambrian.status import run_status
from cambrian.store.store import Store
from cambrian.trace import (
    analyse_cycling,
    analyse_static,
    export_trace,
    import_to_store,
    import_trace,
    load_trace,
)
from cambrian.trace.importers.evotrace import TraceFormatError
from cambrian.trace.layout import TABLES


@pytest.fixture(scope="module")
def evolved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real short evolution: scripted model over HTTP, sandboxed evaluator, real store."""
    root = tmp_path_factory.mktemp("evolved")
    task = write_counter_task(root / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=root / "run", overrides=[
            "evolution.generations=6",
            "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "evolution.max_parallel_evaluations=2",
            "database.num_islands=2",
        ])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    return root / "run"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _analyses(source: Path) -> tuple[dict, dict, list]:
    trace = load_trace(source)
    cycling = analyse_cycling(trace)
    return (analyse_static(trace).to_dict(with_programs=True), cycling.to_dict(),
            [(e.child_id, e.lineage, e.run, e.lineage_spans, e.run_spans) for e in cycling.edits])


@pytest.mark.parametrize("which", ["evolved", "hand-built"])
def test_round_trip_is_byte_identical(which: str, evolved_run: Path, tmp_path: Path):
    run = evolved_run if which == "evolved" else build_run(tmp_path / "run", LINEAGE_RUN)
    first = export_trace(run, tmp_path / "export1")
    rebuilt = import_to_store(first, tmp_path / "rebuilt")
    second = export_trace(rebuilt, tmp_path / "export2")
    assert sorted(p.name for p in first.glob("*.jsonl")) == sorted(f"{t}.jsonl" for t in TABLES)
    assert _files(first) == _files(second)  # tables, blobs and meta.json alike
    assert _analyses(run) == _analyses(rebuilt) == _analyses(first)


def test_exported_trace_equals_the_run(evolved_run: Path, tmp_path: Path):
    original = load_trace(evolved_run)
    exported = import_trace(export_trace(evolved_run, tmp_path / "export"))
    for table in ("candidates", "evaluations", "edges", "contexts", "environments"):
        assert getattr(exported, table) == getattr(original, table), table
    assert exported.run == original.run
    assert len(original.contexts) >= 6  # at least one recorded LLM call per child
    children = {c.id for c in original.evaluated() if c.parent_id is not None}
    assert children  # the run evaluated children, each reachable through its parent edge
    assert children <= {e.child_id for e in exported.edges if e.kind == "parent"}


def test_rebuilt_store_serves_the_rest_of_cambrian(evolved_run: Path, tmp_path: Path):
    rebuilt = import_to_store(export_trace(evolved_run, tmp_path / "export"), tmp_path / "rebuilt")
    stores = [Store.open(evolved_run), Store.open(rebuilt)]
    try:
        before, after = (run_status(s) for s in stores)
        assert (after.best_score, after.best_id, after.by_status, after.llm_calls) == \
            (before.best_score, before.best_id, before.by_status, before.llm_calls)
        assert stores[1].meta.get("program_filename") == "program.py"
        assert stores[1].evaluations.latest(1).private == stores[0].evaluations.latest(1).private
    finally:
        for store in stores:
            store.close()


def test_blobs_are_content_addressed_and_shared(evolved_run: Path, tmp_path: Path):
    folder = export_trace(evolved_run, tmp_path / "export")
    blobs = [p for p in (folder / "blobs").rglob("*") if p.is_file()]
    for blob in blobs:
        assert blob.parent.name == blob.name[:2]
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name
    rows = [json.loads(line) for line in (folder / "candidates.jsonl").read_text().splitlines()]
    sourced = [r for r in rows if r["source_sha256"] is not None]
    assert sourced and all("source" not in r for r in rows)
    contexts = [json.loads(line) for line in (folder / "contexts.jsonl").read_text().splitlines()]
    references = [m["content_sha256"] for c in contexts for m in c["messages"]]
    references += [c["response_sha256"] for c in contexts if c["response_sha256"]]
    assert set(references) <= {blob.name for blob in blobs}
    assert len(set(references)) < len(references)  # the shared system prompt is stored once
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["schema_version"] == 1 and meta["counts"]["candidates"] == len(rows)


def test_import_refuses_an_existing_store_and_damaged_exports(tmp_path: Path):
    run = build_run(tmp_path / "run", LINEAGE_RUN)
    folder = export_trace(run, tmp_path / "export")
    with pytest.raises(FileExistsError):
        import_to_store(folder, run)
    blob = next(p for p in (folder / "blobs").rglob("*") if p.is_file())
    blob.write_text("tampered")
    with pytest.raises(TraceFormatError, match="sha256"):
        import_trace(folder)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "schema_version": 99}))
    with pytest.raises(TraceFormatError, match="schema 99"):
        import_to_store(folder, tmp_path / "rebuilt")
    assert not (tmp_path / "rebuilt" / "run.sqlite").exists()


def test_failed_import_leaves_no_half_made_store(tmp_path: Path):
    trace = load_trace(build_run(tmp_path / "run", LINEAGE_RUN))
    trace.candidates[-1].notes = {"unserialisable": {1, 2}}
    with pytest.raises(TypeError):
        import_to_store(trace, tmp_path / "rebuilt")
    assert not (tmp_path / "rebuilt" / "run.sqlite").exists()
    import_to_store(load_trace(tmp_path / "run"), tmp_path / "rebuilt")  # a retry works
