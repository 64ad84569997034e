"""A small ShinkaEvolve results folder (its ``programs`` table), for the UI's imported runs."""

from __future__ import annotations

import json
import sqlite3
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
    rows = [_program("seed-uuid", SEED, 0, None, 0.1),
            _program("child-uuid", SEED.replace("0.1", "0.4"), 1, "seed-uuid", 0.4)]
    with sqlite3.connect(folder / "programs.sqlite") as db:
        db.execute(f"CREATE TABLE programs ({COLUMNS})")
        for row in rows:
            db.execute(f"INSERT INTO programs ({', '.join(row)}) "
                       f"VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
    return folder
