"""Programs of several files in traces: exported as their files (each text one blob), imported
back into a store that keeps them as files, and byte-identical when exported again."""

from __future__ import annotations

import json
from pathlib import Path

from support.several_files import run_package
from support.store_queries import sql

from cambrian.store.store import Store
from cambrian.task.program_files import split_files
from cambrian.trace import export_trace, import_to_store, load_trace
from cambrian.trace.layout import blob_path, table_path
from cambrian.trace.report import render_report
from cambrian.trace.report_files import file_changes


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_run_of_several_files_round_trips_as_files(tmp_path: Path):
    run_dir, _ = run_package(tmp_path)
    trace = load_trace(run_dir)
    child = next(c for c in trace.candidates if c.description.startswith("Sort"))
    assert [f.path for f in split_files(child.source or "")] == [
        "schedule/__init__.py", "schedule/order.py", "schedule/assign.py"]

    first = export_trace(run_dir, tmp_path / "export")
    assert json.loads((first / "meta.json").read_text())["schema_version"] == 2
    rows = [json.loads(line) for line in table_path(first, "candidates").read_text().splitlines()]
    exported = next(r for r in rows if r["id"] == child.id)
    assert [f["path"] for f in exported["files"]] == [
        "schedule/__init__.py", "schedule/order.py", "schedule/assign.py"]
    assert not blob_path(first, exported["source_sha256"]).exists()  # the files, not the whole
    init_blobs = {r["files"][0]["sha256"] for r in rows if r.get("files")}
    assert len(init_blobs) == 1  # the unchanged __init__.py: one blob for every candidate

    import_to_store(first, tmp_path / "imported")
    with Store.open(tmp_path / "imported") as store:
        assert store.candidates.get(int(child.id)).source == child.source
        assert [f.path for f in store.candidates.blobs.files(int(child.id))][1] == \
            "schedule/order.py"
        assert sql(store, "SELECT source FROM candidates WHERE id=?",
                   (int(child.id),)).fetchone()[0] is None
    second = export_trace(tmp_path / "imported", tmp_path / "export2")
    assert _files(first) == _files(second)


def test_the_report_counts_the_changes_of_each_file(tmp_path: Path):
    run_dir, _ = run_package(tmp_path, 3)
    trace = load_trace(run_dir)
    changes = {path: (n, better, best) for path, n, better, best in file_changes(trace)}
    assert list(changes) == ["schedule/__init__.py", "schedule/order.py", "schedule/assign.py"]
    assert changes["schedule/__init__.py"] == (0, 0, 0)  # fixed: no EVOLVE-BLOCK
    # Every child changed order.py; the two-file child beat its parent and is the best.
    assert changes["schedule/order.py"][0] >= 2 and changes["schedule/order.py"][1] >= 1
    assert changes["schedule/assign.py"][1:] == (1, 1)
    assert changes["schedule/order.py"][2] == 1
    page = render_report(trace)
    assert "Files of the program" in page and "<td>schedule/assign.py</td>" in page
