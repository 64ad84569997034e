"""A task of several files end to end: the real store, sandboxed evaluator and OpenAI provider
over HTTP, with a scripted model whose reply changes two files of the package."""

from __future__ import annotations

import asyncio
import importlib
import json
import shutil
import sys
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.several_files import run_package
from support.store_queries import sql

from cambrian.api import best, resume, start
from cambrian.store.migrations import SCHEMA_VERSION
from cambrian.store.store import Store

CPP_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cpp_header"


def test_a_reply_changing_two_files_is_stored_evaluated_and_written_whole(tmp_path: Path):
    run_dir, replies = run_package(tmp_path)
    prompts = replies.prompts
    # The prompt showed each file under its path and asked for the file before each edit.
    assert "### schedule/order.py\n```python" in prompts[0]
    assert "### schedule/__init__.py (cannot change)" in prompts[0]
    assert "write the path of its file alone on a line" in prompts[0]

    store = Store.open(run_dir)
    child = next(r for r in store.candidates.list() if r.description.startswith("Sort"))
    files = {f.path: f.text for f in store.candidates.blobs.files(child.id)}
    assert list(files) == ["schedule/__init__.py", "schedule/order.py", "schedule/assign.py"]
    assert "-times[job]" in files["schedule/order.py"]
    assert "loads[machine] += times[job]" in files["schedule/assign.py"]
    initial = {f.path: f.text for f in store.candidates.blobs.files(1)}
    assert files["schedule/__init__.py"] == initial["schedule/__init__.py"]
    # Evaluated on both changed files: longest-first on the least loaded machine is near 1.
    assert child.status == "correct" and child.score is not None and child.score > 0.95
    initial_score = store.candidates.get(1).score
    assert initial_score is not None and child.score > initial_score
    # Every text is stored once: the unchanged __init__.py is shared by all three programs.
    held, named = store.candidates.blobs.stored_chars()
    assert held < named
    store.close()

    written = best(run_dir, tmp_path / "out")
    assert written.candidate_id == child.id
    assert written.path == tmp_path / "out" / "schedule" / "__init__.py"
    for path, text in files.items():
        assert (tmp_path / "out" / path).read_text() == text
    sys.path.insert(0, str(tmp_path / "out"))
    try:
        schedule = importlib.import_module("schedule")
        placed = schedule.solve([3.0, 1.0, 2.0, 2.0], 2)  # the evolved package, as written
        assert sorted(placed) == [0, 0, 1, 1] and placed[0] != placed[2]
    finally:
        sys.path.remove(str(tmp_path / "out"))
        for name in [n for n in sys.modules if n == "schedule" or n.startswith("schedule.")]:
            del sys.modules[name]
    best_dir = run_dir / "best"
    assert (best_dir / "schedule" / "assign.py").read_text() == files["schedule/assign.py"]


def test_a_store_from_before_several_files_opens_and_resumes(tmp_path: Path):
    """A run store written before programs could have several files (schema 2: no blob or
    manifest table) is migrated when resumed, and the run goes on where it stopped."""
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        sets = ["evolution.generations=2", "llm.models=[" + json.dumps(llm.model_config()) + "]",
                "novelty.enabled=false", "meta.enabled=false"]
        evolution = start(task, run_dir=tmp_path / "run", overrides=sets)
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
        with Store.open(tmp_path / "run") as store:  # as the version before wrote it
            before = [(r.id, r.source) for r in store.candidates.list()]
            sql(store, "DROP TABLE candidate_files")
            sql(store, "DROP TABLE blobs")
            store.meta.set("schema_version", "2")
        evolution = resume(tmp_path / "run", overrides=["evolution.generations=4"])
        try:
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    assert summary.evaluations == 4 and summary.best_score is not None
    with Store.open(tmp_path / "run") as store:
        assert store.meta.get("schema_version") == str(SCHEMA_VERSION)  # migrated on open
        after = [(r.id, r.source) for r in store.candidates.list()]
        assert after[:len(before)] == before and len(after) > len(before)
        assert sql(store, "SELECT COUNT(*) FROM candidate_files").fetchone()[0] == 0


CPP_REPLY = """Rank by value per weight and keep filling after an item that does not fit
knapsack.hpp
<<<<<<< SEARCH
    return static_cast<double>(item.value);
=======
    return static_cast<double>(item.value) / static_cast<double>(item.weight);
>>>>>>> REPLACE
solver.cpp
<<<<<<< SEARCH
        if (used + items[index].weight > capacity) break;
=======
        if (used + items[index].weight > capacity) continue;
>>>>>>> REPLACE
"""


def test_a_cpp_header_and_source_changed_by_one_reply_compile_together(tmp_path: Path):
    task = shutil.copytree(CPP_EXAMPLE, tmp_path / "task")

    def reply(messages: list[dict[str, str]], index: int) -> str:
        content = messages[-1]["content"]
        assert "### knapsack.hpp\n```cpp" in content and "### solver.cpp\n```cpp" in content
        return CPP_REPLY

    with ScriptedLLM(reply) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "evolution.generations=1", "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
            "mutation.types=[local_fix]"])
        try:
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    with Store.open(tmp_path / "run") as store:
        child = store.candidates.get(2)
        files = {f.path: f.text for f in store.candidates.blobs.files(child.id)}
    assert list(files) == ["solver.cpp", "knapsack.hpp"]
    assert "/ static_cast<double>(item.weight)" in files["knapsack.hpp"]
    assert "capacity) continue;" in files["solver.cpp"]
    assert summary.initial_score is not None and summary.initial_score < 0.92
    assert child.status == "correct" and child.score is not None and child.score > 0.97
    written = best(tmp_path / "run")
    assert written.path == tmp_path / "run" / "best" / "solver.cpp"
    assert (tmp_path / "run" / "best" / "knapsack.hpp").read_text() == files["knapsack.hpp"]


def test_novelty_indexes_programs_of_several_files(tmp_path: Path):
    run_dir, _ = run_package(tmp_path, 2, "novelty.enabled=true", "novelty.judge=false")
    with Store.open(run_dir) as store:
        child = next(r for r in store.candidates.list() if r.description.startswith("Sort"))
        assert child.status == "correct"
        indexed = {int(i) for (i,) in sql(store, "SELECT candidate_id FROM embeddings")}
    assert {1, child.id} <= indexed
