"""Tiered judging through the real engine and CLI: a child screened out at the quick stage is
stored as "screened" with its real quick-stage score and no made-up full score, and is counted
apart from correct children; a remote scorer that is down leaves an event and a console warning
while the run goes on with the local verdicts."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

from judge_helpers import answer_diff, current_answer, write_reach_run_task
from scripted_server import Reply, ScriptedServer
from support.scripted_llm import ScriptedLLM
from support.store_queries import sql, stored_events
from typer.testing import CliRunner

from cambrian.api import start
from cambrian.cli import app
from cambrian.status import run_status
from cambrian.store.store import Store


def rewriting(*expressions: str):
    """The scripted LLM: call i rewrites the parent's answer to expressions[i] (the last one
    repeats)."""
    def reply(messages: list[dict[str, str]], index: int) -> str:
        return answer_diff(expressions[min(index, len(expressions) - 1)],
                           current_answer(messages))
    return reply


def sets(llm: ScriptedLLM, generations: int) -> list[str]:
    return ["llm.models=[" + json.dumps(llm.model_config()) + "]",
            f"evolution.generations={generations}", "evolution.patch_types=[diff]",
            "evolution.patch_type_probs=[1.0]", "mutation.schedule=off",
            "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false"]


def test_screened_child_has_its_quick_score_only_and_is_counted_apart(tmp_path: Path):
    task = write_reach_run_task(tmp_path / "task", public_seeds=[0, 7],
                                tiers={"quick_cases": 2, "quick_threshold": 0.9})
    run_dir = tmp_path / "run"
    # Child 2 keeps a quarter of the best on the quick cases (screened); child 3 is a new best.
    with ScriptedLLM(rewriting("n // 8", "n")) as llm:
        evolution = start(task, run_dir=run_dir, overrides=sets(llm, 2))
        try:
            summary = asyncio.run(evolution.run())
            program = evolution.selector.programs[2]
            assert program.correct is False and program.fitness is None  # not in the ranking
        finally:
            evolution.store.close()
    assert summary.evaluations == 2 and summary.stop_reason == "generation budget reached"

    store = Store.open(run_dir)
    try:
        screened, best = store.candidates.get(2), store.candidates.get(3)
        assert screened.status == "screened" and screened.score is None
        assert best.status == "correct" and summary.best_id == 3
        stages = sql(store, "SELECT stage, status, combined_score FROM evaluations "
                               "WHERE candidate_id=2 ORDER BY id").fetchall()
        quick = store.evaluations.latest(2, stage="quick")
        case_scores = [c["score"] for c in quick.extra["cases"]]
        assert [s[0] for s in stages] == ["quick", "main"]
        assert stages[0][1] == "ok" and stages[0][2] is not None
        assert stages[1][2] is None  # no full-set number, invented or otherwise
        assert store.evaluations.latest(2).extra["quick_score"] == stages[0][2] == sum(case_scores) / 2
        # The quick score is the real mean of n // 8 on the two quick cases, well under 90%
        # of the initial program's n // 2 there.
        initial_quick = store.evaluations.latest(1, stage="quick").combined_score
        assert stages[0][2] < 0.9 * initial_quick
        status = run_status(store)
    finally:
        store.close()
    assert status.generations == 2
    assert status.by_status == {"correct": 2, "screened": 1}
    assert status.correct_rate == 0.5 and status.screened_rate == 0.5
    assert status.best_id == 3

    shown = CliRunner().invoke(app, ["status", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert re.search(r"evaluated children correct\s*│\s*50%", shown.output)
    assert re.search(r"evaluated children screened out\s*│\s*50%", shown.output)


def test_remote_scorer_down_is_an_event_and_a_console_warning(tmp_path: Path):
    with ScriptedServer([], default=Reply(503, {"error": "down for maintenance"})) as server:
        task = write_reach_run_task(
            tmp_path / "task", remote={"url": server.url, "max_attempts": 2,
                                       "initial_backoff_s": 0.01, "min_interval_s": 0})
        run_dir = tmp_path / "run"
        with ScriptedLLM(rewriting("n")) as llm:
            overrides = [arg for s in sets(llm, 1) for arg in ("--set", s)]
            finished = subprocess.run(
                [sys.executable, "-m", "cambrian.cli", "run", str(task), "--run-dir",
                 str(run_dir), "--quiet", *overrides],
                capture_output=True, text=True, timeout=300)
        requests = len(server.received)
    assert finished.returncode == 0, finished.stderr
    # Both the initial program and its better child went to the remote stage: 2 attempts each.
    assert requests == 4
    warnings = [line for line in finished.stderr.splitlines() if "warning:" in line]
    assert len(warnings) == 2, finished.stderr
    assert all("remote scorer unavailable" in w for w in warnings)
    assert "HTTP 503" in finished.stderr and "unreachable after 2 attempts" in finished.stderr

    store = Store.open(run_dir)
    try:
        events = stored_events(store, "remote_scorer_down")
        assert [e["payload"]["candidate_id"] for e in events] == [1, 2]
        assert all("HTTP 503" in e["payload"]["error"] for e in events)
        # The run went on with the local verdicts.
        assert [store.candidates.get(i).status for i in (1, 2)] == ["correct", "correct"]
        assert store.evaluations.latest(2, stage="remote").status == "crashed"
    finally:
        store.close()
