"""Test-case inputs on disk: case files are used in place, generated cases are made once per seed.

A generated case is ``python gen.py SEED``'s stdout, cached at
``CACHE/<generator name>-<sha256(generator)[:16]>/<seed>.in``: editing the generator starts a
fresh folder, and files are written under a temporary name and renamed, so concurrent
evaluations (or processes) never read a half-written case.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from cambrian.config.judge import CaseRef
from cambrian.evaluate.sandbox import run_sandboxed

GENERATOR_MAX_OUTPUT_BYTES = 64_000_000
GENERATOR_MEMORY_LIMIT_MB = 4096


class CaseGenerationError(RuntimeError):
    """The task's generator could not produce a case: a task problem, not a candidate's."""


class CaseStore:
    def __init__(
        self,
        cache_dir: Path,
        generator_path: Path | None,
        *,
        python: str = sys.executable,
        timeout_s: float = 60.0,
        max_parallel: int = 2,
    ) -> None:
        self.generator_path = Path(generator_path).resolve() if generator_path else None
        self.python = python
        self.timeout_s = timeout_s
        self.max_parallel = max_parallel
        self.generated = 0  # generator runs by this store (cache misses)
        self.cache_dir = Path(cache_dir).resolve()
        self._folder = self.cache_dir
        if self.generator_path is not None:
            digest = hashlib.sha256(self.generator_path.read_bytes()).hexdigest()[:16]
            self._folder = self._folder / f"{self.generator_path.stem}-{digest}"
        self._locks: dict[int, asyncio.Lock] = {}

    def cached_path(self, seed: int) -> Path:
        return self._folder / f"{seed}.in"

    async def input_path(self, case: CaseRef) -> Path:
        if case.file is not None:
            return case.file
        if case.seed is None:
            raise ValueError(f"case {case.case_id} has neither a file nor a seed")
        path = self.cached_path(case.seed)
        lock = self._locks.setdefault(case.seed, asyncio.Lock())
        async with lock:
            if not path.exists():
                await self._generate(case.seed, path)
        return path

    async def input_paths(self, cases: Sequence[CaseRef]) -> list[Path]:
        """Materialise every case (generating missing ones, a few at a time), in order."""
        gate = asyncio.Semaphore(self.max_parallel)

        async def one(case: CaseRef) -> Path:
            async with gate:
                return await self.input_path(case)

        return list(await asyncio.gather(*(one(case) for case in cases)))

    async def _generate(self, seed: int, path: Path) -> None:
        if self.generator_path is None:
            raise CaseGenerationError(f"seed {seed} needs a generator, but the task has none")
        path.parent.mkdir(parents=True, exist_ok=True)
        # Task code, contained like every evaluator: its own scratch folder (so, as root, the
        # sandbox user and a read-only view), its folder readable, nothing else writable.
        scratch = path.parent / f".generate-{seed}-{uuid.uuid4().hex[:8]}"
        try:
            run = await run_sandboxed(
                [self.python, str(self.generator_path), str(seed)],
                cwd=self.generator_path.parent, env=None, timeout_s=self.timeout_s,
                memory_limit_mb=GENERATOR_MEMORY_LIMIT_MB,
                max_output_bytes=GENERATOR_MAX_OUTPUT_BYTES, scratch_dir=scratch,
                read_only_paths=[self.generator_path.parent],
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        where = f"{self.generator_path.name} {seed}"
        if run.timed_out:
            raise CaseGenerationError(f"`{where}` did not finish within {self.timeout_s:g} s")
        if run.returncode != 0:
            tail = run.stderr.strip()[-1500:]
            raise CaseGenerationError(f"`{where}` exited with code {run.returncode}:\n{tail}")
        if run.stdout_truncated_bytes:
            raise CaseGenerationError(
                f"`{where}` printed more than {GENERATOR_MAX_OUTPUT_BYTES} bytes"
            )
        if not run.stdout.strip():
            raise CaseGenerationError(f"`{where}` printed nothing")
        self.generated += 1
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        temporary.write_text(run.stdout, encoding="utf-8")
        os.replace(temporary, path)
