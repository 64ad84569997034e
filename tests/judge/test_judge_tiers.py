"""Tiered evaluation with real Python candidates and a store-backed best reference, the way the
engine is meant to drive it: stage rows per candidate, `reference_from_store` as best_reference."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from judge_helpers import reach_judge
from scripted_server import Reply, ScriptedServer
from support.store_queries import add_candidate, sql

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.objective import MAXIMIZE, MINIMIZE, Objective
from cambrian.evaluate.judge.factory import build_task_evaluator
from cambrian.evaluate.judge.tiers import (
    TieredEvaluator,
    is_screened,
    passes_quick,
    reference_from_store,
    relative_shortfall,
    stage_results,
)
from cambrian.store.store import Store


def fraction_program(numerator: int, denominator: int) -> str:
    return f"n = int(input())\nprint(n * {numerator} // {denominator})\n"


def test_quick_threshold_is_scale_free_and_direction_aware():
    # maximize: at least 90% of the best
    assert passes_quick(90.0, 100.0, 0.9, MAXIMIZE)
    assert not passes_quick(89.0, 100.0, 0.9, MAXIMIZE)
    assert passes_quick(90e6, 100e6, 0.9, MAXIMIZE)  # same decision at any scale
    # minimize: at most 10% above the best
    assert passes_quick(110.0, 100.0, 0.9, MINIMIZE)
    assert not passes_quick(111.0, 100.0, 0.9, MINIMIZE)
    # negative scores: measured against |best|
    assert passes_quick(-105.0, -100.0, 0.9, MAXIMIZE)
    assert not passes_quick(-115.0, -100.0, 0.9, MAXIMIZE)
    # no best yet: always promoted; better than the best: always promoted
    assert passes_quick(1.0, None, 0.9, MAXIMIZE)
    assert relative_shortfall(120.0, 100.0, MAXIMIZE) == 0.0
    assert math.isinf(relative_shortfall(-1.0, 0.0, MAXIMIZE))


class Run:
    """A run store fed like the engine would: one row per stage, then the final result."""

    def __init__(self, path: Path, objective: Objective = MAXIMIZE) -> None:
        self.store = Store.open(path, create=True)
        self.objective = objective
        self.store.runs.create(run_id="tiers", task_name="reach", task_dir=str(path),
                              direction=objective.direction,
                              language="python", config={}, seed=0, code_version="test")

    def best_reference(self):
        return reference_from_store(self.store, self.objective)

    def record(self, source: str, result: EvaluationResult) -> int:
        with self.store.transaction():
            candidate = add_candidate(self.store, generation=0, island=0, parent_id=None,
                                                 operator="test", status="pending",
                                                 language="python", source=source)
            for stage, stage_result in stage_results(result):
                self.store.evaluations.add(candidate, stage_result, stage=stage)
            self.store.evaluations.add(candidate, result, stage="main")
            correct = result.correct and result.combined_score is not None
            status = "screened" if is_screened(result) else "correct" if correct else "incorrect"
            self.store.candidates.update(candidate, status=status, score=result.combined_score)
        return candidate


def stage_names(result: EvaluationResult) -> list[str]:
    return [stage["stage"] for stage in result.extra["stages"]]


@pytest.fixture
def run(tmp_path: Path):
    created = Run(tmp_path / "run")
    yield created
    created.store.close()


async def test_tiers_screen_promote_and_call_the_remote_scorer_only_for_a_new_best(
    reach_task: Path, tmp_path: Path, run: Run
):
    judge = reach_judge("python", public_seeds=[0, 7],
                        tiers={"quick_cases": 2, "quick_threshold": 0.9},
                        remote={"url": "http://placeholder/", "min_interval_s": 0})
    with ScriptedServer([], default=Reply(200, {"score": 42.0})) as server:
        judge["remote"]["url"] = server.url
        evaluator = build_task_evaluator(reach_task, judge, run_dir=tmp_path / "r",
                                         best_reference=run.best_reference)
        assert isinstance(evaluator, TieredEvaluator)

        async def evaluate(source: str, name: str) -> EvaluationResult:
            result = await evaluator.evaluate(source, tmp_path / name)
            run.record(source, result)
            return result

        # The first candidate always passes, and with no best yet it also goes remote.
        half = await evaluate(fraction_program(1, 2), "half")
        assert stage_names(half) == ["quick", "full", "remote"]
        assert half.extra["promoted"] is True
        assert half.public["remote_score"] == 42.0
        assert len(half.extra["cases"]) == 8

        # Far below the best on the quick stage: stops there, with its real quick-stage score
        # and no full-set score at all (none is made up for it).
        quarter = await evaluate(fraction_program(1, 4), "quarter")
        assert stage_names(quarter) == ["quick"]
        assert quarter.status == "ok" and is_screened(quarter)
        assert quarter.extra["promoted"] is False and quarter.combined_score is None
        assert len(quarter.extra["cases"]) == 2
        quick_stage = quarter.extra["stages"][0]
        assert quick_stage["passed"] is False
        assert quarter.extra["quick_score"] == quick_stage["combined_score"]
        assert quick_stage["combined_score"] == pytest.approx(
            sum(c["score"] for c in quarter.extra["cases"]) / 2)
        assert quick_stage["combined_score"] < 0.9 * quick_stage["reference"]
        assert quick_stage["reference"] == half.extra["stages"][0]["combined_score"]
        assert "Screened out at the quick stage" in quarter.text_feedback
        assert "no full public score" in quarter.text_feedback

        # Within 10% on the quick stage: full evaluation, but no new best, so no remote call.
        near = await evaluate(fraction_program(95, 200), "near")
        assert stage_names(near) == ["quick", "full"]
        assert near.extra["promoted"] is True
        assert near.combined_score < half.combined_score

        # A new best: all three stages.
        whole = await evaluate(fraction_program(1, 1), "whole")
        assert stage_names(whole) == ["quick", "full", "remote"]
        assert whole.combined_score > half.combined_score

        assert len(server.received) == 2  # half and whole only

    reference = run.best_reference()
    assert reference == {"full": whole.combined_score,
                         "quick": whole.extra["stages"][0]["combined_score"], "remote": 42.0}
    # Stored: the quick stage row holds the real quick score; the candidate has no score.
    rows = sql(run.store, 
        "SELECT e.stage, e.combined_score, c.status, c.score FROM evaluations e "
        "JOIN candidates c ON c.id = e.candidate_id WHERE c.source = ? ORDER BY e.id",
        (fraction_program(1, 4),)).fetchall()
    assert rows == [("quick", quarter.extra["quick_score"], "screened", None),
                    ("main", None, "screened", None)]


async def test_unreachable_remote_keeps_the_local_verdict(reach_task: Path, tmp_path: Path):
    from scripted_server import closed_port_url

    judge = reach_judge("python", remote={"url": closed_port_url(), "max_attempts": 2,
                                          "initial_backoff_s": 0.01, "min_interval_s": 0})
    evaluator = build_task_evaluator(reach_task, judge, run_dir=tmp_path / "r",
                                     best_reference=lambda: None)
    result = await evaluator.evaluate(fraction_program(1, 1), tmp_path / "w")
    assert result.status == "ok"
    assert stage_names(result) == ["full", "remote"]
    assert result.extra["stages"][1]["status"] == "crashed"
    assert "unreachable after 2 attempts" in result.extra["remote_error"]
    assert "unreachable" not in result.text_feedback  # not the program's fault; not for the LLM


async def test_incorrect_quick_stage_stops_without_promotion(reach_task: Path, tmp_path: Path):
    judge = reach_judge("python", public_seeds=[0, 7], tiers={"quick_cases": 2})
    evaluator = build_task_evaluator(reach_task, judge, run_dir=tmp_path / "r",
                                     best_reference=lambda: None)
    result = await evaluator.evaluate("print(-1)\n", tmp_path / "w")
    assert result.status == "incorrect"
    assert stage_names(result) == ["quick"]
    assert result.extra["promoted"] is False


async def test_quick_stage_cases_are_not_run_twice(reach_task: Path, tmp_path: Path):
    # Each run leaves a line in its own case folder (a run cannot write outside it).
    program = ("import os\nn = int(input())\n"
               "open('runs.log', 'a').write(os.getcwd() + '\\n')\nprint(n)\n")
    judge = reach_judge("python", public_seeds=[0, 5], tiers={"quick_cases": 2})
    evaluator = build_task_evaluator(reach_task, judge, run_dir=tmp_path / "r",
                                     best_reference=lambda: None)
    result = await evaluator.evaluate(program, tmp_path / "w")
    assert result.status == "ok"
    runs = [line for log in (tmp_path / "w").rglob("runs.log")
            for line in log.read_text().splitlines()]
    assert len(runs) == 6
