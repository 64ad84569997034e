"""Small foreign traces for the UI's imported runs: a ShinkaEvolve results folder (its
``programs`` table) and an OpenEvolve output folder (``checkpoints/checkpoint_N/`` with
``metadata.json`` and ``programs/<id>.json``), in the shapes those frameworks write."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

COLUMNS = """
    id TEXT PRIMARY KEY, code TEXT NOT NULL, language TEXT NOT NULL, parent_id TEXT,
    archive_inspiration_ids TEXT, top_k_inspiration_ids TEXT, generation INTEGER NOT NULL,
    timestamp REAL NOT NULL, code_diff TEXT, combined_score REAL, public_metrics TEXT,
    private_metrics TEXT, text_feedback TEXT, complexity REAL, embedding TEXT,
    embedding_pca_2d TEXT, embedding_pca_3d TEXT, embedding_cluster_id INTEGER,
    correct BOOLEAN DEFAULT 0, children_count INTEGER DEFAULT 0, metadata TEXT,
    migration_history TEXT, island_idx INTEGER, system_prompt_id TEXT
"""
SEED = "STEP = 0.1\n\ndef run():\n    return STEP\n"


def _program(uid: str, code: str, generation: int, parent: str | None,
             score: float) -> dict[str, object]:
    metadata = {"patch_type": "init" if parent is None else "diff",
                "model_name": None if parent is None else "gpt-test", "compute_time": 1.0,
                "llm_result": None if parent is None else {
                    "msg": "Improve it", "system_msg": "You are an expert.",
                    "model_name": "gpt-test", "content": f"```python\n{code}```",
                    "input_tokens": 100, "output_tokens": 20, "cost": 0.01}}
    return {"id": uid, "code": code, "language": "python", "parent_id": parent,
            "archive_inspiration_ids": "[]", "top_k_inspiration_ids": "[]",
            "generation": generation, "timestamp": 1_700_000_000.0 + generation,
            "combined_score": score, "public_metrics": json.dumps({"score": score}),
            "private_metrics": "{}", "text_feedback": "", "correct": 1,
            "metadata": json.dumps(metadata), "migration_history": "[]", "island_idx": 0}


def make_shinka_results(folder: Path) -> Path:
    folder.mkdir(parents=True)
    with closing(sqlite3.connect(folder / "programs.sqlite")) as db, db:
        db.execute(f"CREATE TABLE programs ({COLUMNS})")
    add_shinka_program(folder, _program("seed-uuid", SEED, 0, None, 0.1))
    add_shinka_program(folder, _program("child-uuid", SEED.replace("0.1", "0.4"), 1,
                                        "seed-uuid", 0.4))
    return folder


def add_shinka_program(folder: Path, row: dict[str, object]) -> None:
    with closing(sqlite3.connect(folder / "programs.sqlite")) as db, db:
        db.execute(f"INSERT INTO programs ({', '.join(row)}) "
                   f"VALUES ({', '.join('?' * len(row))})", tuple(row.values()))


def shinka_child(uid: str, generation: int, parent: str, score: float) -> dict[str, object]:
    return _program(uid, SEED.replace("0.1", str(score)), generation, parent, score)


OPENEVOLVE_SEED = "def run():\n    return 1.0\n"
OPENEVOLVE_PROMPT = {"diff_user": {
    "system": "You are an expert programmer.", "user": "Improve run() to return more.",
    "responses": ["<<<<<<< SEARCH\n    return 1.0\n=======\n    return 1.5\n>>>>>>> REPLACE"]}}


def _openevolve_program(uid: str, iteration: int, parent: str | None, metrics: dict[str, float],
                        code: str, **extra: object) -> dict[str, object]:
    return {"id": uid, "code": code, "language": "python", "parent_id": parent,
            "generation": 0 if parent is None else 1, "timestamp": 1_700_000_100.0 + iteration,
            "iteration_found": iteration, "metrics": metrics, "complexity": len(code),
            "diversity": 0.0, "metadata": {"island": 0, "changes": extra.pop("changes", "")},
            "prompts": None, "artifacts_json": None, "artifact_dir": None, "embedding": None,
            **extra}


def make_openevolve_output(folder: Path) -> Path:
    """Two checkpoints; the latest holds a seed (1.0), its improved child (1.5) and a child
    that failed to evaluate."""
    programs = [
        _openevolve_program("oe-seed", 0, None, {"combined_score": 1.0}, OPENEVOLVE_SEED),
        _openevolve_program("oe-better", 1, "oe-seed", {"combined_score": 1.5},
                            OPENEVOLVE_SEED.replace("1.0", "1.5"), changes="return 1.5",
                            prompts=OPENEVOLVE_PROMPT),
        _openevolve_program("oe-broken", 2, "oe-seed", {"error": 0.0}, "def run(:\n"),
    ]
    for number, kept in ((1, programs[:2]), (2, programs)):
        checkpoint = folder / "checkpoints" / f"checkpoint_{number}"
        (checkpoint / "programs").mkdir(parents=True)
        (checkpoint / "metadata.json").write_text(json.dumps({
            "islands": [[p["id"] for p in kept]], "archive": [p["id"] for p in kept],
            "best_program_id": "oe-better", "last_iteration": number, "current_island": 0,
            "island_generations": [number]}))
        for program in kept:
            (checkpoint / "programs" / f"{program['id']}.json").write_text(json.dumps(program))
    return folder
