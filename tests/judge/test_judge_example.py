"""The heuristic_contest example: its config is valid and its baseline is a correct program."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import yaml

from cambrian.config import validate_config
from cambrian.config.judge import parse_judge_config
from cambrian.evaluate.judge.factory import build_judged_evaluator, build_task_evaluator
from cambrian.evaluate.judge.tiers import TieredEvaluator
from cambrian.task.blocks import parse_regions

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"


def example_config() -> dict:
    return yaml.safe_load((EXAMPLE / "config.yaml").read_text())


def test_example_config_is_valid():
    config = example_config()
    judge = parse_judge_config(config["judge"])
    assert judge.language == "cpp" and judge.tiers is not None
    # Every other section is a valid run config as it stands today.
    validate_config({key: value for key, value in config.items() if key != "judge"})
    regions = parse_regions((EXAMPLE / "initial.cpp").read_text())
    assert regions.has_markers and len(regions.blocks) == 1
    # I/O stays outside the evolvable block.
    assert not regions.is_mutable(next(i for i, line in enumerate(regions.lines)
                                       if "int main()" in line))


async def test_baseline_compiles_and_passes_every_public_case(tmp_path: Path):
    judge = example_config()["judge"]
    evaluator = build_judged_evaluator(EXAMPLE, judge, run_dir=tmp_path / "run")
    await evaluator.prepare()  # case generation is a one-off per run; time the evaluation alone
    started = time.monotonic()
    result = await evaluator.evaluate((EXAMPLE / "initial.cpp").read_text(), tmp_path / "work")
    elapsed = time.monotonic() - started
    assert result.status == "ok", result.error
    assert result.public["accepted"] == len(evaluator.public_cases) == 20
    assert math.isfinite(result.combined_score) and 0 < result.combined_score < 1_000_000
    print(f"full public evaluation of the baseline (compile included): {elapsed:.2f} s")

    tiered = build_task_evaluator(EXAMPLE, judge, run_dir=tmp_path / "run",
                                  best_reference=lambda: None)
    assert isinstance(tiered, TieredEvaluator)
    again = await tiered.evaluate((EXAMPLE / "initial.cpp").read_text(), tmp_path / "tiered")
    assert again.combined_score == pytest.approx(result.combined_score)
    assert again.extra["compile"]["cache_hit"] is True


def test_the_llm_reads_the_statement_not_the_readme():
    """README.md is also a problem-statement name; problem.md must win in this folder, and the
    README (which names the private seeds) must reach no prompt."""
    from cambrian.api import resolve_config
    from cambrian.task.folder import load_task

    task = load_task(EXAMPLE, resolve_config(EXAMPLE))
    assert task.problem_statement == (EXAMPLE / "problem.md").read_text()
    assert "cambrian generalization" in (EXAMPLE / "README.md").read_text()
