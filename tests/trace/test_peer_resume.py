"""A peer's run imported and continued: a ShinkaEvolve results folder (its programs.sqlite, with
the initial program copied onto a second island) and an OpenEvolve checkpoint folder, both in
the shapes those frameworks write, imported with `cambrian trace import`, counted as the peer
counts them, and resumed for a few generations with a stand-in LLM."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM
from typer.testing import CliRunner

from cambrian.api import resume
from cambrian.cli import app
from cambrian.core.status import CandidateStatus
from cambrian.status import run_status
from cambrian.store.store import Store

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peer_folders"
QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false"]

# ShinkaEvolve's programs table (shinka/database/dbase.py), with its archive and metadata.
SHINKA_SCHEMA = """
CREATE TABLE programs (
    id TEXT PRIMARY KEY, code TEXT NOT NULL, language TEXT NOT NULL, parent_id TEXT,
    archive_inspiration_ids TEXT, top_k_inspiration_ids TEXT, generation INTEGER NOT NULL,
    timestamp REAL NOT NULL, code_diff TEXT, combined_score REAL, public_metrics TEXT,
    private_metrics TEXT, text_feedback TEXT, complexity REAL, embedding TEXT,
    embedding_pca_2d TEXT, embedding_pca_3d TEXT, embedding_cluster_id INTEGER,
    correct BOOLEAN DEFAULT 0, children_count INTEGER NOT NULL DEFAULT 0, metadata TEXT,
    migration_history TEXT, island_idx INTEGER, system_prompt_id TEXT);
CREATE TABLE archive (program_id TEXT PRIMARY KEY);
CREATE TABLE metadata_store (key TEXT PRIMARY KEY, value TEXT);
"""
SOLVE = re.compile(r"return \[seed(?:, \d+)*\]")


def shinka_code(extra: list[int]) -> str:
    initial = (PEERS / "shinka_style" / "initial.py").read_text()
    return initial.replace("return [seed, 1, 2]",
                           "return [seed, 1, 2" + "".join(f", {v}" for v in extra) + "]")


def shinka_row(uid: str, generation: int, parent: str | None, extra: list[int], island: int,
               correct: bool = True, kept_call: bool = True,
               **metadata: object) -> dict[str, object]:
    score = 5.0 + sum(extra) if correct else 0.0
    llm_result = None if parent is None or not kept_call else {
        "msg": f"Improve the program (gen {generation})", "system_msg": "You are an expert.",
        "model_name": "gpt-5-mini", "content": "```python\n...\n```", "kwargs": {},
        "input_tokens": 900, "output_tokens": 120, "cost": 0.002}
    meta = {"patch_type": "init" if parent is None else "diff", "patch_name": f"gen{generation}",
            "model_name": None if parent is None else "gpt-5-mini", "compute_time": 0.4,
            "llm_result": llm_result, "api_costs": 0.002, **metadata}
    return {"id": uid, "code": shinka_code(extra), "language": "python", "parent_id": parent,
            "archive_inspiration_ids": "[]", "top_k_inspiration_ids": "[]",
            "generation": generation, "timestamp": 1_700_000_000.0 + generation,
            "combined_score": score, "public_metrics": json.dumps({"sums": [score]}),
            "private_metrics": "{}", "text_feedback": "", "complexity": 2.0, "embedding": "[]",
            "correct": int(correct), "children_count": 0, "metadata": json.dumps(meta),
            "migration_history": "[]", "island_idx": island}


def shinka_run(tmp_path: Path) -> tuple[Path, Path]:
    """A task folder with its results: 12 programs, the initial one and its copy on island 1,
    then 10 children over generations 1..12 (two generations failed: no program), one of
    them incorrect. ShinkaEvolve's own counts: 12 programs, 10 children."""
    task = Path(shutil.copytree(PEERS / "shinka_style", tmp_path / "circle"))
    results = task / "results_small"
    results.mkdir()
    rows = [shinka_row("init", 0, None, [], 0),
            shinka_row("init-copy", 0, None, [], 1, _is_island_copy=True,
                       _original_program_id="init")]
    parents = {0: "init", 1: "init-copy"}
    generation = 0
    for index in range(10):
        generation += 2 if index in (3, 7) else 1
        island = index % 2
        correct = index != 5
        uid = f"child-{index}"
        rows.append(shinka_row(uid, generation, parents[island], [index + 1], island, correct,
                               kept_call=index % 4 != 2))  # two calls' messages not kept
        if correct:
            parents[island] = uid
    with sqlite3.connect(results / "programs.sqlite") as db:
        db.executescript(SHINKA_SCHEMA)
        for row in rows:
            db.execute(f"INSERT INTO programs ({', '.join(row)}) VALUES "
                       f"({', '.join('?' * len(row))})", tuple(row.values()))
        db.executemany("INSERT INTO metadata_store VALUES (?, ?)",
                       [("last_iteration", str(generation)), ("best_program_id", "child-9")])
        db.executemany("INSERT INTO archive VALUES (?)",
                       [(r["id"],) for r in rows if r["correct"]])
    return task, results


def raise_the_sum(messages: list[dict[str, str]], index: int) -> str:
    user = next(m["content"] for m in messages if m["role"] == "user")
    current = SOLVE.findall(user)[0]
    new = current[:-1] + f", {40 + index}]"
    if "SEARCH" in user.split("## Your task")[-1]:
        return f"Add a number\n<<<<<<< SEARCH\n    {current}\n=======\n    {new}\n>>>>>>> REPLACE\n"
    return f"Add a number\n```python\ndef solve(seed):\n    {new}\n```\n"


def continue_run(run_dir: Path, llm: ScriptedLLM, generations: int):
    evolution = resume(run_dir, overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", *QUIET,
        f"evolution.generations={generations}", "evolution.patch_types=[diff,full]",
        "evolution.patch_type_probs=[0.5,0.5]",
        "mutation.opening=[]"])  # the scripted replies are diffs, not the step's score
    try:
        return asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def test_a_shinka_run_is_imported_with_its_counts_and_resumed(tmp_path: Path):
    task, results = shinka_run(tmp_path)
    run_dir = tmp_path / "imported"
    imported = CliRunner().invoke(app, ["trace", "import", str(results), str(run_dir)],
                                  terminal_width=200)
    assert imported.exit_code == 0, imported.output
    assert f"10 children, task folder {task}" in imported.output
    assert f"cambrian resume {run_dir} --generations 20" in imported.output
    with Store.open(run_dir) as store:
        status = run_status(store)
        info = store.runs.info()
        assert store.meta.get("imported_from") == "shinkaevolve"
        assert store.meta.get("best_program_id") == "child-9"
        assert store.meta.get("last_iteration") == "12"
        rows = store.candidates.list()
    # ShinkaEvolve's counts: the island copy is no child, every child had one LLM call.
    assert status.generations == 10 and status.budget == 10 and status.llm_calls == 10
    assert sum(m.cost_usd for m in status.models) == pytest.approx(10 * 0.002)
    assert status.best_score == 5.0 + 10 and status.initial_score == 5.0
    assert len(rows) == 11 and sum(r.status is CandidateStatus.INCORRECT for r in rows) == 1
    # A child of the copy on island 1 is a child of the initial program.
    assert rows[2].parent_id == 1 and rows[2].island == 1
    assert info.task_dir == str(task) and info.config["task"]["description"].startswith(
        "You are an expert in simple sums.")
    assert "imported_from" not in info.config

    with ScriptedLLM(raise_the_sum) as llm:
        summary = continue_run(run_dir, llm, generations=12)
    assert summary.evaluations == 12
    with Store.open(run_dir) as store:
        status = run_status(store)
        new = [r for r in store.candidates.list() if r.id > 11]
    assert status.generations == 12 and len(new) == 2
    assert all(r.status is CandidateStatus.CORRECT for r in new)
    assert status.best_score > 15.0  # a child adds 40+ to the best sum
    assert status.llm_calls >= 12  # the two children's calls (a side step may add one)


def openevolve_run(tmp_path: Path) -> tuple[Path, Path]:
    """OpenEvolve's output of a run on the counter task: checkpoint_5 holds the population it
    kept (5 programs: the initial one and four children) and its metadata."""
    task = Path(shutil.copytree(PEERS / "openevolve_cascade", tmp_path / "counter"))
    initial = (task / "initial_program.py").read_text()
    checkpoint = task / "openevolve_output" / "checkpoints" / "checkpoint_5"
    (checkpoint / "programs").mkdir(parents=True)
    values = {"p0": (1, None, 0), "p1": (3, "p0", 1), "p2": (2, "p1", 2), "p3": (4, "p1", 3),
              "p4": (5, "p3", 5)}
    for pid, (value, parent, iteration) in values.items():
        program = {
            "id": pid, "code": initial.replace("VALUE = 1", f"VALUE = {value}"),
            "changes_description": "" if parent is None else f"VALUE to {value}",
            "language": "python", "parent_id": parent, "generation": iteration,
            "timestamp": 1_700_000_000.0 + iteration, "iteration_found": iteration,
            "metrics": {"value": float(value), "validity": 1.0, "combined_score": value / 10},
            "complexity": 0.0, "diversity": 0.0,
            "metadata": {"island": iteration % 3, "migrant": False,
                         **({"changes": "Change 1: VALUE", "parent_metrics": {}}
                            if parent else {})},
            "prompts": None if parent is None else {"diff_user": {
                "system": "You are an expert at tuning counters.",
                "user": "# Current Program\n...", "responses": ["<<<<<<< SEARCH ..."]}},
            "artifacts_json": None, "artifact_dir": None, "embedding": None}
        (checkpoint / "programs" / f"{pid}.json").write_text(json.dumps(program))
    (checkpoint / "metadata.json").write_text(json.dumps({
        "island_feature_maps": [{}, {}, {}], "islands": [["p0", "p3"], ["p1"], ["p2", "p4"]],
        "archive": ["p4", "p3", "p1"], "best_program_id": "p4",
        "island_best_programs": ["p3", "p1", "p4"], "last_iteration": 5,
        "current_island": 2, "island_generations": [2, 1, 2], "last_migration_generation": 0,
        "feature_stats": {}}))
    (checkpoint / "best_program.py").write_text(initial.replace("VALUE = 1", "VALUE = 5"))
    (checkpoint / "best_program_info.json").write_text(json.dumps({"id": "p4"}))
    return task, checkpoint.parent.parent


def raise_value(messages: list[dict[str, str]], index: int) -> str:
    user = next(m["content"] for m in messages if m["role"] == "user")
    current = re.search(r"VALUE = (\d+)", user).group(1)
    new = min(int(current) + 2, 10)
    if "SEARCH" in user.split("## Your task")[-1]:
        return f"Raise it\n<<<<<<< SEARCH\nVALUE = {current}\n=======\nVALUE = {new}\n>>>>>>> REPLACE\n"
    return f"Raise it\n```python\nVALUE = {new}\n\n\ndef value():\n    return VALUE\n```\n"


def test_an_openevolve_checkpoint_is_imported_and_resumed(tmp_path: Path):
    task, output = openevolve_run(tmp_path)
    run_dir = tmp_path / "imported"
    imported = CliRunner().invoke(app, ["trace", "import", str(output), str(run_dir)],
                                  terminal_width=200)
    assert imported.exit_code == 0, imported.output
    with Store.open(run_dir) as store:
        status = run_status(store)
        assert store.meta.get("checkpoint") == "checkpoint_5"
        assert store.meta.get("best_program_id") == "p4"
        assert store.runs.info().task_dir == str(task)
    assert status.generations == 4 and status.best_score == 0.5 and status.llm_calls == 4
    # max_iterations: 3 in the folder's config.yaml is less than what the run did.
    assert status.budget == 4

    with ScriptedLLM(raise_value) as llm:
        summary = continue_run(run_dir, llm, generations=6)
    assert summary.evaluations == 6
    with Store.open(run_dir) as store:
        status = run_status(store)
    assert status.generations == 6 and status.best_score >= 0.7


def test_an_import_without_its_task_folder_says_how_to_resume(tmp_path: Path):
    _, results = shinka_run(tmp_path)
    alone = Path(shutil.copytree(results, tmp_path / "elsewhere" / "deep" / "results"))
    run_dir = tmp_path / "imported"
    imported = CliRunner().invoke(app, ["trace", "import", str(alone), str(run_dir)])
    assert imported.exit_code == 0 and "import again with --task DIR" in imported.output
    resumed = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert resumed.exit_code != 0
    assert "without its task folder" in resumed.output
    again = CliRunner().invoke(app, ["trace", "import", str(alone), str(tmp_path / "second"),
                                     "--task", str(tmp_path / "circle")])
    assert again.exit_code == 0 and "10 children, task folder" in again.output


def test_a_checkpoint_child_whose_parent_was_dropped_still_counts(tmp_path: Path):
    """OpenEvolve keeps a bounded population: a checkpoint may hold a child whose parent it
    dropped. That child is still one of the run's children, for status and the budget."""
    task, output = openevolve_run(tmp_path)
    programs = output / "checkpoints" / "checkpoint_5" / "programs"
    orphan = json.loads((programs / "p4.json").read_text())
    orphan.update(id="p5", parent_id="evicted", iteration_found=5, timestamp=1_700_000_006.0)
    (programs / "p5.json").write_text(json.dumps(orphan))
    run_dir = tmp_path / "imported"
    imported = CliRunner().invoke(app, ["trace", "import", str(output), str(run_dir)],
                                  terminal_width=200)
    assert imported.exit_code == 0, imported.output
    assert f"5 children, task folder {task}" in imported.output
    with Store.open(run_dir) as store:
        status = run_status(store)
    assert status.generations == 5 and status.budget == 5
