"""Compile a candidate once per unique source, per language (seed 002 §12 "Compilation cache").

Toolchains: C++17 (``g++ -std=c++17 -O2``), Rust (``rustc -O --edition 2021``) and Python
(``py_compile`` as the "compile" step, so syntax errors surface as compile errors with their line
numbers; the program then runs under the given interpreter).

The cache key is sha256(source, compile command, compiler version). Each entry is a directory
built under a temporary name and renamed into place; rename is atomic, so a reader -- another
evaluation, or another process sharing the cache -- sees a complete entry or none, and two
writers racing on the same key both end up using one complete entry. Compile errors are cached
too (they are deterministic); compiler timeouts are not.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cambrian.evaluate.child_env import SCRATCH_TMP_DIRNAME
from cambrian.evaluate.containment import reclaim_ownership
from cambrian.evaluate.sandbox import run_sandboxed
from cambrian.lang.languages import as_language, registered_languages
from cambrian.lang.toolchain import (
    Toolchain,
    cpp_toolchain,
    python_toolchain,
    rust_toolchain,
)

__all__ = ["CompileCache", "Toolchain", "cpp_toolchain", "python_toolchain", "rust_toolchain",
           "toolchain_for"]

RESULT_FILENAME = "result.json"
MAX_ERROR_LINES = 40
MAX_ERROR_CHARS = 4_000
COMPILER_OUTPUT_BYTES = 200_000
# ASCII quotes in messages, whatever the host locale.
COMPILER_ENV = {"LC_ALL": "C", "LANG": "C"}

_LINE_REFERENCES = (
    re.compile(r"^main\.(?:cpp|rs):(\d+):\d+:", re.MULTILINE),  # g++
    re.compile(r"-->\s*main\.rs:(\d+):\d+", re.MULTILINE),  # rustc
    re.compile(r'File "main\.py", line (\d+)', re.MULTILINE),  # py_compile
)


def toolchain_for(language: str, python: str = sys.executable) -> Toolchain:
    """The judge's toolchain of a registered language (a ValueError naming the languages that
    have one when it has none)."""
    found = as_language(language)
    if found.toolchain is None:
        with_toolchain = sorted(lang.name for lang in registered_languages() if lang.toolchain)
        raise ValueError(f"no judge toolchain for language {language!r} "
                         f"({', '.join(with_toolchain)})")
    return found.toolchain(python)


@functools.cache
def compiler_version(version_argv: tuple[str, ...]) -> str:
    """First line of `compiler --version`; part of the cache key, so an upgrade recompiles."""
    try:
        completed = subprocess.run(
            list(version_argv), capture_output=True, text=True, timeout=30, check=False,
            env={**os.environ, **COMPILER_ENV},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CompilerUnavailable(f"cannot run {version_argv[0]!r}: {error}") from None
    lines = (completed.stdout or completed.stderr).strip().splitlines()
    if completed.returncode != 0 or not lines:
        raise CompilerUnavailable(f"`{' '.join(version_argv)}` failed: {completed.stderr.strip()}")
    return lines[0]


class CompilerUnavailable(RuntimeError):
    """The toolchain's compiler cannot be run at all (not installed, broken)."""


def trim_compiler_output(text: str, build_dir: Path | None = None) -> str:
    """The first lines of a compiler's message, with build-folder paths removed."""
    if build_dir is not None:
        text = text.replace(f"{build_dir}/", "")
    lines = [line.rstrip() for line in text.strip().splitlines()]
    kept = lines[:MAX_ERROR_LINES]
    trimmed = "\n".join(kept)
    if len(trimmed) > MAX_ERROR_CHARS:
        trimmed = trimmed[:MAX_ERROR_CHARS].rsplit("\n", 1)[0]
        kept = trimmed.splitlines()
    if len(kept) < len(lines):
        trimmed += f"\n... ({len(lines) - len(kept)} more lines)"
    return trimmed


def error_line_numbers(message: str) -> list[int]:
    """Source line numbers a compiler message points at, in order, without repeats."""
    found: list[int] = []
    for pattern in _LINE_REFERENCES:
        for match in pattern.finditer(message):
            line = int(match.group(1))
            if line not in found:
                found.append(line)
    return found


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    key: str
    artifact: Path | None
    run_argv: tuple[str, ...]
    error: str  # trimmed compiler message; empty when ok
    duration_s: float  # of the original compilation, also on a cache hit
    cache_hit: bool
    command: str

    @property
    def error_lines(self) -> list[int]:
        return error_line_numbers(self.error)


class CompileCache:
    """Compiled artifacts by sha256(source + command + compiler version), shared on disk."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        timeout_s: float = 120.0,
        memory_limit_mb: int | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir).resolve()
        self.timeout_s = timeout_s
        self.memory_limit_mb = memory_limit_mb
        self.compiler_invocations = 0
        self.hits = 0
        self._locks: dict[str, asyncio.Lock] = {}

    def key(self, source: str, toolchain: Toolchain) -> str:
        digest = hashlib.sha256()
        for part in (source, toolchain.command, compiler_version(toolchain.version_argv)):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    async def compile(self, source: str, toolchain: Toolchain,
                      hidden_paths: Sequence[Path] = ()) -> CompileResult:
        """The compiled program (a cache hit, or a compilation now). `hidden_paths`: folders
        the compiler must not see (a candidate's `#include` or `include_str!` could read them
        into its program or its error message); the cache's own folder always is."""
        key = await asyncio.to_thread(self.key, source, toolchain)
        # One compilation per key in this process; other processes are covered by the rename.
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._load(key, toolchain)
            if cached is not None:
                self.hits += 1
                return cached
            return await self._build(key, source, toolchain, hidden_paths)

    def _load(self, key: str, toolchain: Toolchain) -> CompileResult | None:
        entry = self.cache_dir / key
        try:
            record = json.loads((entry / RESULT_FILENAME).read_text())
        except (OSError, ValueError):
            return None
        artifact = entry / toolchain.artifact_name
        if record["ok"] and not artifact.exists():
            return None
        return CompileResult(
            ok=record["ok"], key=key, artifact=artifact if record["ok"] else None,
            run_argv=tuple(toolchain.run_argv(artifact)) if record["ok"] else (),
            error=record["error"], duration_s=record["duration_s"], cache_hit=True,
            command=toolchain.command,
        )

    async def _build(self, key: str, source: str, toolchain: Toolchain,
                     hidden_paths: Sequence[Path]) -> CompileResult:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        build_dir = self.cache_dir / f".tmp-{key[:16]}-{uuid.uuid4().hex[:8]}"
        build_dir.mkdir()
        try:
            (build_dir / toolchain.source_name).write_text(source, encoding="utf-8")
            self.compiler_invocations += 1
            started = time.monotonic()
            # The compiler reads candidate source: contained, writing only its build folder.
            run = await run_sandboxed(
                list(toolchain.compile_argv), cwd=build_dir,
                env={**COMPILER_ENV, **dict(toolchain.compile_env)},
                timeout_s=self.timeout_s, memory_limit_mb=self.memory_limit_mb,
                max_output_bytes=COMPILER_OUTPUT_BYTES,
                scratch_dir=build_dir, read_only_paths=toolchain.compile_read_paths,
                hidden_paths=(self.cache_dir, *hidden_paths),
            )
            duration = time.monotonic() - started
            shutil.rmtree(build_dir / SCRATCH_TMP_DIRNAME, ignore_errors=True)
            reclaim_ownership(build_dir)
            if run.timed_out:
                return CompileResult(
                    ok=False, key=key, artifact=None, run_argv=(), cache_hit=False,
                    error=f"compilation timed out after {self.timeout_s:g} s",
                    duration_s=duration, command=toolchain.command,
                )
            ok = run.returncode == 0 and (build_dir / toolchain.artifact_name).exists()
            message = "" if ok else trim_compiler_output(run.stderr + run.stdout, build_dir)
            if not ok and not message:
                message = f"compiler exited with code {run.returncode} and printed nothing"
            record = {"ok": ok, "error": message, "duration_s": duration}
            (build_dir / RESULT_FILENAME).write_text(json.dumps(record))
            self._publish(build_dir, self.cache_dir / key)
        finally:
            if build_dir.exists():
                shutil.rmtree(build_dir, ignore_errors=True)
        loaded = self._load(key, toolchain)
        if loaded is None:
            raise RuntimeError(f"compile cache entry {key} vanished right after it was written")
        return dataclasses.replace(loaded, cache_hit=False, duration_s=duration)

    @staticmethod
    def _publish(build_dir: Path, entry: Path) -> None:
        try:
            os.rename(build_dir, entry)
            return
        except OSError:
            if (entry / RESULT_FILENAME).exists():
                return  # another writer published this key first; its entry is as good
        # A damaged entry (no result record) is set aside, then ours takes its place.
        with contextlib.suppress(OSError):
            os.rename(entry, entry.with_name(f".stale-{entry.name}-{uuid.uuid4().hex[:8]}"))
        with contextlib.suppress(OSError):
            os.rename(build_dir, entry)
