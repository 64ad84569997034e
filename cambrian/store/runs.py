"""The ``runs`` and ``environments`` tables: what the run is (task, direction, configuration,
seed, code version) and what is needed to re-run a candidate against its evaluator."""

from __future__ import annotations

import time
from typing import Any

from cambrian.store.codec import loads
from cambrian.store.database import Database, StoreError
from cambrian.store.rows import RunInfo


class Runs:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, *, run_id: str, task_name: str, task_dir: str, direction: str,
               language: str, config: dict[str, Any], seed: int, code_version: str) -> None:
        self._db.execute(
            "INSERT INTO runs(id, created_at, task_name, task_dir, direction, language, "
            "config_json, seed, code_version) VALUES (?,?,?,?,?,?,?,?,?)",
            (run_id, time.time(), task_name, task_dir, direction, language,
             self._db.codec.json(config), seed, code_version))

    def info(self) -> RunInfo:
        row = self._db.execute(
            "SELECT id, created_at, task_name, task_dir, direction, language, config_json, seed, "
            "code_version, framework FROM runs LIMIT 1").fetchone()
        if row is None:
            raise StoreError(f"{self._db.path} holds no run (it was left by a run that failed "
                             "before it started); delete the folder or start the run again in it")
        return RunInfo(id=row[0], created_at=row[1], task_name=row[2], task_dir=row[3],
                       direction=row[4], language=row[5], config=loads(row[6], {}), seed=row[7],
                       code_version=row[8], framework=row[9])

    def identity(self) -> tuple[str, str, str] | None:
        """(run id, language, direction), without reading the configuration."""
        row = self._db.execute("SELECT id, language, direction FROM runs LIMIT 1").fetchone()
        return (row[0], row[1] or "", row[2]) if row else None

    def exists(self) -> bool:
        return self._db.one("SELECT COUNT(*) FROM runs") > 0

    def update_config(self, config: dict[str, Any]) -> None:
        self._db.execute("UPDATE runs SET config_json=?", (self._db.codec.json(config),))

    def add_environment(self, *, evaluator: str, contract: str, command: str,
                        limits: dict[str, Any], toolchain: dict[str, Any],
                        file_hashes: dict[str, str]) -> int:
        codec = self._db.codec
        cursor = self._db.execute(
            "INSERT INTO environments(evaluator, contract, command, limits_json, toolchain_json, "
            "file_hashes_json, created_at) VALUES (?,?,?,?,?,?,?)",
            (evaluator, contract, command, codec.json(limits), codec.json(toolchain),
             codec.json(file_hashes), time.time()))
        return int(cursor.lastrowid or 0)

    def file_hashes(self) -> dict[str, str]:
        """The task files' hashes recorded when the run was created (latest environment)."""
        raw = self._db.one("SELECT file_hashes_json FROM environments ORDER BY id DESC LIMIT 1")
        return loads(raw, {})
