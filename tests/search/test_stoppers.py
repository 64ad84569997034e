"""Early stops: `evolution.target_score` (respecting the task's direction) and
`evolution.patience` (evaluations without a better best). Real runs with the scripted server;
the stop is recorded in the session's end with an outcome whose exit code is 0."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import (
    COUNTER_INITIAL,
    ScriptedLLM,
    counter_reply,
    current_value,
    incrementing,
    write_counter_task,
)

from cambrian.api import resume, start
from cambrian.config import ConfigError, build_config
from cambrian.core.events import SessionEnded
from cambrian.core.outcomes import RunOutcome
from cambrian.store.store import Store


def decrementing(messages: list[dict[str, str]], index: int) -> str:
    """The parent's VALUE lowered by (call index + 1), in the format the prompt asks for."""
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    wants_diff = "SEARCH" in first_user.split("## Your task")[-1]
    return counter_reply(current_value(messages), -(index + 1), wants_diff)


def sets(llm: ScriptedLLM, generations: int, *more: str) -> list[str]:
    return [f"evolution.generations={generations}",
            "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "evolution.max_parallel_evaluations=1", "novelty.enabled=false",
            "meta.enabled=false", "comprehension.enabled=false", *more]


def run(evolution):
    try:
        return asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def session_ends(run_dir: Path) -> list[SessionEnded]:
    with Store.open(run_dir) as store:
        return store.events.of_type(SessionEnded)


def test_the_run_stops_when_the_best_reaches_the_target(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        summary = run(start(task, run_dir=tmp_path / "run",
                            overrides=sets(llm, 30, "evolution.target_score=4")))
        assert summary.outcome is RunOutcome.TARGET_REACHED
        assert summary.outcome.exit_code == 0
        assert summary.best_score is not None and summary.best_score >= 4
        assert summary.evaluations < 30
        assert summary.stop_reason.startswith("target score reached")
        assert session_ends(tmp_path / "run")[-1].outcome == "target_reached"

        # Resumed as it is, the run has nothing left to do; with a higher target it goes on.
        calls = len(llm.requests)
        again = run(resume(tmp_path / "run"))
        assert again.outcome is RunOutcome.TARGET_REACHED and len(llm.requests) == calls
        higher = run(resume(tmp_path / "run", overrides=["evolution.target_score=12"]))
    assert higher.outcome is RunOutcome.TARGET_REACHED and higher.best_score >= 12


def test_a_minimised_target_is_reached_from_above(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", config="task:\n  direction: minimize\n")
    with ScriptedLLM(decrementing) as llm:
        summary = run(start(task, run_dir=tmp_path / "run",
                            overrides=sets(llm, 30, "evolution.target_score=-4")))
    assert summary.outcome is RunOutcome.TARGET_REACHED
    assert summary.best_score is not None and summary.best_score <= -4
    assert summary.evaluations < 30


def test_an_initial_program_at_the_target_needs_no_llm_call(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        summary = run(start(task, run_dir=tmp_path / "run",
                            overrides=sets(llm, 5, "evolution.target_score=1")))
        assert llm.requests == []
    assert summary.outcome is RunOutcome.TARGET_REACHED and summary.evaluations == 0


def test_patience_stops_a_run_that_no_longer_improves(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", initial=COUNTER_INITIAL.replace(
        "VALUE = 1", "VALUE = 100"))
    with ScriptedLLM(decrementing) as llm:  # every child scores below the initial program
        summary = run(start(task, run_dir=tmp_path / "run",
                            overrides=sets(llm, 30, "evolution.patience=3")))
        assert summary.outcome is RunOutcome.NO_IMPROVEMENT
        assert summary.best_id == 1 and 3 <= summary.evaluations < 6
        assert "patience 3" in summary.stop_reason
        assert session_ends(tmp_path / "run")[-1].outcome == "no_improvement"
        # The count survives a resume: still nothing better, so nothing more to wait for.
        calls = len(llm.requests)
        again = run(resume(tmp_path / "run"))
        assert again.outcome is RunOutcome.NO_IMPROVEMENT and len(llm.requests) == calls
        longer = run(resume(tmp_path / "run", overrides=["evolution.patience=5"]))
    assert longer.outcome is RunOutcome.NO_IMPROVEMENT and longer.evaluations >= 5


def test_patience_counts_from_the_last_improvement(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:  # every child improves: patience never runs out
        summary = run(start(task, run_dir=tmp_path / "run",
                            overrides=sets(llm, 6, "evolution.patience=2")))
    assert summary.outcome is RunOutcome.COMPLETED and summary.evaluations == 6


def test_stopper_settings_are_checked():
    assert build_config([], ["evolution.target_score=2.5"]).evolution.target_score == 2.5
    with pytest.raises(ConfigError, match="patience"):
        build_config([], ["evolution.patience=0"])
    with pytest.raises(ConfigError, match="target_score"):
        build_config([], ["evolution.target_score=.nan"])
