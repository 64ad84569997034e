"""Build the evaluator of a judged task from its `judge:` config section.

The compile cache and the generated cases live in the run directory by default
(RUN_DIR/.compile_cache, RUN_DIR/.case_cache), so a resumed run reuses both.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from cambrian.config.judge import JudgeConfig, parse_judge_config, resolve_judge_task
from cambrian.evaluate.judge.cases import CaseStore
from cambrian.evaluate.judge.evaluator import JudgedEvaluator
from cambrian.evaluate.judge.remote import RemoteScorer
from cambrian.evaluate.judge.tiers import ReferenceProvider, TieredEvaluator
from cambrian.evaluate.judge.toolchains import CompileCache

COMPILE_CACHE_DIRNAME = ".compile_cache"
CASE_CACHE_DIRNAME = ".case_cache"


def as_judge_config(judge: JudgeConfig | dict[str, Any]) -> JudgeConfig:
    return judge if isinstance(judge, JudgeConfig) else parse_judge_config(judge)


def build_judged_evaluator(
    task_dir: Path,
    judge: JudgeConfig | dict[str, Any],
    *,
    run_dir: Path,
    task_direction: str = "maximize",
    python: str = sys.executable,
    compile_cache_dir: Path | None = None,
    case_cache_dir: Path | None = None,
) -> JudgedEvaluator:
    config = as_judge_config(judge)
    task = resolve_judge_task(Path(task_dir), config, task_direction)
    run_dir = Path(run_dir)
    return JudgedEvaluator(
        task,
        compile_cache=CompileCache(compile_cache_dir or run_dir / COMPILE_CACHE_DIRNAME,
                                   timeout_s=config.compile_timeout_s),
        case_store=CaseStore(case_cache_dir or run_dir / CASE_CACHE_DIRNAME,
                             task.generator_path, python=python,
                             timeout_s=config.generator_timeout_s,
                             max_parallel=config.max_parallel_cases),
        python=python,
        run_dir=run_dir,
    )


def build_task_evaluator(
    task_dir: Path,
    judge: JudgeConfig | dict[str, Any],
    *,
    run_dir: Path,
    task_direction: str = "maximize",
    best_reference: ReferenceProvider | None = None,
    python: str = sys.executable,
    remote_transport: httpx.AsyncBaseTransport | None = None,
) -> JudgedEvaluator | TieredEvaluator:
    """A TieredEvaluator when the section declares tiers or a remote scorer, else the plain
    JudgedEvaluator. `best_reference` is required in the tiered case."""
    config = as_judge_config(judge)
    judged = build_judged_evaluator(task_dir, config, run_dir=run_dir,
                                    task_direction=task_direction, python=python)
    if config.tiers is None and config.remote is None:
        return judged
    if best_reference is None:
        raise ValueError("a judge section with tiers or a remote scorer needs best_reference")
    remote = (RemoteScorer(config.remote, language=config.language, transport=remote_transport)
              if config.remote is not None else None)
    return TieredEvaluator(judged, best_reference, tiers=config.tiers, remote=remote)


def public_case_headers(task_dir: Path, judge: JudgeConfig, run_dir: Path,
                        max_chars: int = 200) -> dict[str, str]:
    """The first line of each public case's input the run has on disk (a case file, or a
    generated case in the run's case cache), by case id: what a planner may read of the cases
    evolution sees. Private cases are never read."""
    task = resolve_judge_task(Path(task_dir), judge, "maximize")
    store = CaseStore(Path(run_dir) / CASE_CACHE_DIRNAME, task.generator_path)
    headers: dict[str, str] = {}
    for case in task.public:
        path = case.file if case.file is not None else (
            store.cached_path(case.seed) if case.seed is not None else None)
        if path is None or not path.is_file():
            continue
        with open(path, "rb") as handle:
            first = handle.readline(max_chars).decode("utf-8", "replace").strip()
        headers[case.case_id] = first
    return headers
