"""Judge a candidate like a contest does: compile once, run on each case, score, aggregate.

`JudgedEvaluator.evaluate(source, work_dir)` has the same contract as ProgramEvaluator and only
ever runs the PUBLIC cases. `evaluate_private` exists for the held-out generalization report and
puts everything it learns into `EvaluationResult.private`, never into fields a prompt shows.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cambrian.config.judge import CaseRef, JudgeTask
from cambrian.core.evaluation import EvaluationResult
from cambrian.evaluate.judge.cases import CaseGenerationError, CaseStore
from cambrian.evaluate.judge.scoring import Scorer
from cambrian.evaluate.judge.summary import (
    aggregate,
    cases_payload,
    failure_error,
    feedback_text,
    score_statistics,
    verdict_counts,
)
from cambrian.evaluate.judge.toolchains import (
    CompileCache,
    CompileResult,
    CompilerUnavailable,
    Toolchain,
    toolchain_for,
)
from cambrian.evaluate.judge.verdicts import CaseResult, RunLimits, Verdict, classify_run
from cambrian.evaluate.sandbox import run_sandboxed
from cambrian.lang.languages import as_language

# Feeds the case file to the program as stdin; `exec` keeps the sandbox's process the program.
STDIN_WRAPPER = ("/bin/sh", "-c", 'exec "$@" < "$0"')


@dataclass
class CaseBatch:
    results: list[CaseResult]  # in case order; cases not run are left out
    skipped: int = 0
    outputs: dict[str, str] = field(default_factory=dict)  # case id -> stdout, when kept


def _fresh_file(path: Path, text: str) -> Path:
    """Writes `text` to a new file at `path`, never through a link the program left there."""
    if path.is_symlink() or path.exists():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def _safe_dirname(case_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in case_id) or "case"


class JudgedEvaluator:
    def __init__(
        self,
        task: JudgeTask,
        *,
        compile_cache: CompileCache,
        case_store: CaseStore,
        python: str = sys.executable,
        toolchain: Toolchain | None = None,
        run_dir: Path | None = None,
    ) -> None:
        self.task = task
        self.config = task.config
        self.compile_cache = compile_cache
        self.case_store = case_store
        self.toolchain = toolchain or toolchain_for(task.config.language, python)
        # Hidden from the task's scorer: the run folder (the store) and the caches.
        run_folders = tuple(dict.fromkeys(
            Path(folder).resolve()
            for folder in (run_dir, compile_cache.cache_dir, case_store.cache_dir) if folder))
        # Hidden from the program under judgement and its compiler, whatever their paths say:
        # also the task folder (held-out cases, generator, scorer). What a run needs under
        # them (its input, its executable, its scratch folder) stays readable there alone.
        self.hidden_paths = (task.root, *task.private_paths, *run_folders)
        self.scorer = Scorer(task.scorer_path, mode=task.config.scorer_mode, python=python,
                             timeout_s=task.config.scorer_timeout_s, hidden_paths=run_folders)
        self.limits = RunLimits(
            time_limit_s=task.config.time_limit_s,
            wall_limit_s=task.config.wall_limit_s,
            memory_limit_mb=task.config.memory_limit_mb,
            max_output_bytes=task.config.max_output_bytes,
        )
        self.failed_case_score = task.config.resolved_failed_case_score(task.objective)
        self._gate_by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    @property
    def public_cases(self) -> tuple[CaseRef, ...]:
        return self.task.public

    def _gate(self) -> asyncio.Semaphore:
        # One cap on running cases per evaluator and event loop, shared by concurrent evaluations.
        loop = asyncio.get_running_loop()
        if loop not in self._gate_by_loop:
            self._gate_by_loop[loop] = asyncio.Semaphore(self.config.max_parallel_cases)
        return self._gate_by_loop[loop]

    async def prepare(self) -> None:
        """Generate every public case now; raises CaseGenerationError for a broken generator."""
        await self.case_store.input_paths(self.task.public)

    async def compile(self, source: str) -> CompileResult:
        return await self.compile_cache.compile(source, self.toolchain,
                                                hidden_paths=self.hidden_paths)

    async def close(self) -> None:
        """End the scorer's warm worker, if it started one."""
        await self.scorer.close()

    # ------------------------------------------------------------------ running cases

    async def run_cases(
        self,
        compiled: CompileResult,
        cases: Sequence[CaseRef],
        work_dir: Path,
        *,
        keep_outputs: bool = False,
    ) -> CaseBatch:
        """Run (in parallel, up to max_parallel_cases) and score each case.

        With require_all_accepted, cases not yet started when one fails are skipped: the
        candidate is already incorrect, and a timing-out program would otherwise burn the
        time limit on every case.
        """
        assert compiled.ok, "run_cases needs a successful compilation"
        inputs = await self.case_store.input_paths(cases)
        stop = asyncio.Event()
        stop_on_failure = self.config.require_all_accepted

        async def one(case: CaseRef, input_path: Path) -> tuple[CaseResult, str] | None:
            async with self._gate():
                if stop.is_set():
                    return None
                outcome = await self._run_case(compiled, case, input_path, work_dir)
            if stop_on_failure and not outcome[0].accepted:
                stop.set()
            return outcome

        outcomes = await asyncio.gather(*(one(c, p) for c, p in zip(cases, inputs)))
        batch = CaseBatch(results=[], skipped=sum(o is None for o in outcomes))
        for outcome in outcomes:
            if outcome is not None:
                batch.results.append(outcome[0])
                if keep_outputs and outcome[0].accepted:
                    batch.outputs[outcome[0].case_id] = outcome[1]
        return batch

    async def _run_case(
        self, compiled: CompileResult, case: CaseRef, input_path: Path, work_dir: Path
    ) -> tuple[CaseResult, str]:
        case_dir = Path(work_dir) / "cases" / _safe_dirname(case.case_id)
        case_dir.mkdir(parents=True, exist_ok=True)
        # The case folder is the program's scratch folder, the only place it may write; the
        # input file and the compiled artifact (absolute arguments) stay readable, and nothing
        # else of the task, the run or this evaluation (other cases) is there to be read.
        run = await run_sandboxed(
            [*STDIN_WRAPPER, str(input_path), *compiled.run_argv],
            cwd=case_dir,
            env=None,
            timeout_s=self.limits.wall_limit_s,
            memory_limit_mb=self.limits.memory_limit_mb,
            max_output_bytes=self.limits.max_output_bytes,
            cpu_time_limit_s=self.limits.time_limit_s,
            scratch_dir=case_dir,
            hidden_paths=(*self.hidden_paths, Path(work_dir)),
        )
        failure = classify_run(run, self.limits)
        if failure is not None:
            verdict, message = failure
            return CaseResult(case.case_id, verdict, None, run.duration_s, message), ""
        output_path = _fresh_file(case_dir / "output.txt", run.stdout)
        scored = await self.scorer.score(input_path, output_path,
                                         Path(work_dir) / "scoring" / case_dir.name)
        if scored.error is not None:
            return CaseResult(case.case_id, Verdict.WA, None, run.duration_s, scored.error), ""
        return CaseResult(case.case_id, Verdict.AC, scored.score, run.duration_s), run.stdout

    # ------------------------------------------------------------------ results

    def compile_error_result(self, compiled: CompileResult) -> EvaluationResult:
        message = f"compile error ({compiled.command}):\n{compiled.error}"
        # The compiler's message is in `error`; prompts show both fields, so no repeat here.
        return EvaluationResult(
            status="incorrect",
            text_feedback="The program did not compile; no test case was run.",
            error=message,
            duration_s=compiled.duration_s,
            extra={"verdict": Verdict.CE.value, "cases": [],
                   "compile": self._compile_info(compiled)},
        )

    @staticmethod
    def _compile_info(compiled: CompileResult) -> dict[str, object]:
        info: dict[str, object] = {
            "ok": compiled.ok, "cache_hit": compiled.cache_hit,
            "duration_s": round(compiled.duration_s, 3), "command": compiled.command,
        }
        if not compiled.ok:
            info["error_lines"] = compiled.error_lines
        return info

    def batch_result(
        self,
        compiled: CompileResult,
        batch: CaseBatch,
        *,
        set_label: str,
        planned: int,
        duration_s: float,
    ) -> EvaluationResult:
        results = batch.results
        failed = [r for r in results if not r.accepted]
        incorrect = self.config.require_all_accepted and bool(failed or batch.skipped)
        combined: float | None = None
        if not incorrect and results:
            scores = [r.score if r.accepted and r.score is not None else self.failed_case_score
                      for r in results]
            combined = aggregate(scores, self.config.aggregation, self.config.std_penalty,
                                 self.task.objective)
        public: dict[str, float | int] = {
            "cases": len(results), "accepted": len(results) - len(failed),
            **score_statistics(results),
        }
        return EvaluationResult(
            status="incorrect" if incorrect or not results else "ok",
            combined_score=combined,
            public=public,
            text_feedback=feedback_text(
                results, set_label=set_label, planned=planned, skipped=batch.skipped,
                objective=self.task.objective, combined_score=combined,
                aggregation=self.config.aggregation,
            ),
            error=failure_error(results, set_label) if incorrect else "",
            duration_s=duration_s,
            extra={
                "cases": cases_payload(results),
                "verdicts": verdict_counts(results),
                "skipped_cases": batch.skipped,
                "compile": self._compile_info(compiled),
            },
        )

    # ------------------------------------------------------------------ entry points

    async def evaluate_cases(
        self, source: str, work_dir: Path, cases: Sequence[CaseRef], *, set_label: str
    ) -> EvaluationResult:
        loop = asyncio.get_running_loop()
        started = loop.time()
        work_dir = Path(work_dir).resolve()
        work_dir.mkdir(parents=True, exist_ok=True)
        (work_dir / f"program{self.source_suffix}").write_text(source, encoding="utf-8")
        try:
            compiled = await self.compile(source)
            if not compiled.ok:
                return self.compile_error_result(compiled)
            batch = await self.run_cases(compiled, cases, work_dir)
        except (CaseGenerationError, CompilerUnavailable) as error:
            return EvaluationResult(status="crashed", error=f"judge setup failed: {error}",
                                    duration_s=loop.time() - started)
        return self.batch_result(compiled, batch, set_label=set_label, planned=len(cases),
                                 duration_s=loop.time() - started)

    @property
    def source_suffix(self) -> str:
        """The file extension of the program's language (a copy is kept beside the results)."""
        extensions = as_language(self.toolchain.language).extensions
        return extensions[0] if extensions else ".txt"

    async def evaluate(self, source: str, work_dir: Path) -> EvaluationResult:
        """Compile and judge on the public cases (the evaluation the search sees)."""
        return await self.evaluate_cases(source, work_dir, self.task.public, set_label="public")

    async def evaluate_private(self, source: str, work_dir: Path) -> EvaluationResult:
        """Judge on the held-out cases; the details land in `.private` only (seed 001 B.7)."""
        if not self.task.private:
            raise ValueError("the judge section declares no private cases "
                             "(private_seeds or private_cases)")
        result = await self.evaluate_cases(source, work_dir, self.task.private,
                                           set_label="private")
        return EvaluationResult(
            status=result.status,
            combined_score=result.combined_score,
            private={**result.public, "summary": result.text_feedback, "error": result.error,
                     "cases": result.extra.get("cases", [])},
            duration_s=result.duration_s,
        )
