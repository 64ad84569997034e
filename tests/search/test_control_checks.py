"""Every steering request is checked where it is made, by one code path (control_checks.py for
control requests, GuidanceBoard for guidance), which the web UI, `cambrian control` and
`cambrian guide` all call: finite numbers of the setting's type and range, no truncation, a
budget that ends the run only when confirmed, guidance only for candidates that exist and within
prompt.max_guidance_chars. Nothing refused is stored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from typer.testing import CliRunner

from cambrian.api import start
from cambrian.cli import app
from cambrian.meta.guidance import GuidanceBoard, GuidanceRefused
from cambrian.search.control import queue_control
from cambrian.search.control_checks import ControlRefused, NeedsConfirmation
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of 3 children (budget 3), guidance limit 50 characters."""
    root = tmp_path_factory.mktemp("checks")
    task = write_counter_task(root / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=root / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=3",
            "novelty.enabled=false", "meta.enabled=false", "prompt.max_guidance_chars=50"])
        asyncio.run(evolution.run())
        evolution.store.close()
    return root / "run"


@pytest.mark.parametrize(("values", "refusal"), [
    ({"generations": 2.7}, "generations must be a whole number, got 2.7"),
    ({"generations": "inf"}, "generations must be a finite number"),
    ({"max_cost_usd": "nan"}, "max_cost_usd must be a finite number"),
    ({"max_cost_usd": float("nan")}, "max_cost_usd must be a finite number"),
    ({"generations": -5}, "greater than or equal to 0"),
    ({"max_cost_usd": 0}, "greater than 0"),
    ({"generations": True}, "generations must be a number"),
    ({"generations": [4]}, "generations must be a number"),
    ({"generations": "four"}, "generations must be a number"),
    ({"generation": 4}, "budget request changes one of generations"),
    ({}, "budget request changes one of"),
])
def test_bad_budgets_are_refused_and_never_stored(run_dir: Path, values: dict, refusal: str):
    store = Store.open(run_dir)
    try:
        with pytest.raises(ControlRefused, match=refusal):
            queue_control(Recorder(store), "budget", values, source="test")
        assert store.control.pending() == []
    finally:
        store.close()


def test_a_budget_ending_the_run_needs_confirmation(run_dir: Path):
    store = Store.open(run_dir)
    try:
        for ending in (0, 3, 2):  # 3 children evaluated already
            with pytest.raises(NeedsConfirmation, match="the run would stop at once"):
                queue_control(Recorder(store), "budget", {"generations": ending})
        assert store.control.pending() == []
        answer = queue_control(Recorder(store), "budget", {"generations": "40"})
        assert answer.text == "evaluation budget 3 → 40 children" and answer.payload == {
            "generations": 40}
        confirmed = queue_control(Recorder(store), "budget", {"generations": 0}, confirm=True)
        assert confirmed.text.endswith("(the run stops at once)")
        assert [r.payload for r in store.control.pending()] == [{"generations": 40},
                                                                {"generations": 0}]
        assert queue_control(Recorder(store), "pause").text.startswith("no new proposals")
        with pytest.raises(ControlRefused, match="pause takes no values"):
            queue_control(Recorder(store), "pause", {"generations": 4})
    finally:
        for request in store.control.pending():
            store.control.mark_applied(request.id)
        store.close()


def test_guidance_for_a_missing_candidate_or_over_the_limit_is_refused(run_dir: Path):
    store = Store.open(run_dir)
    try:
        board = GuidanceBoard(Recorder(store), None)
        assert board.max_chars == 50
        with pytest.raises(GuidanceRefused, match="this run has no candidate 999"):
            board.change("append", "keep going", target="candidate:999")
        first = board.change("append", "use steps of ten", source="test")
        with pytest.raises(GuidanceRefused, match="over the limit of 50"):
            board.change("append", "x" * 100, source="test")
        with pytest.raises(GuidanceRefused, match="over the limit of 50"):
            board.change("replace", "y" * 51, source="test")
        assert board.current().id == first.id and board.current().text == "use steps of ten"
        assert board.change("append", "keep them", target="lineage:1").text == "keep them"
    finally:
        store.close()


def test_the_commands_use_the_same_checks(run_dir: Path):
    runner = CliRunner()
    refused = runner.invoke(app, ["control", str(run_dir), "budget", "--max-cost", "nan"])
    assert refused.exit_code == 2 and "max_cost_usd must be a finite number" in refused.output
    ending = runner.invoke(app, ["control", str(run_dir), "budget", "-g", "1"])
    assert ending.exit_code == 2 and "add --confirm" in ending.output
    ok = runner.invoke(app, ["control", str(run_dir), "budget", "-g", "9"])
    assert ok.exit_code == 0 and "evaluation budget 3 → 9 children" in ok.output
    missing = runner.invoke(app, ["guide", str(run_dir), "hi", "--target", "candidate:77"])
    assert missing.exit_code == 2 and "no candidate 77" in missing.output
    long = runner.invoke(app, ["guide", str(run_dir), "z" * 60])
    assert long.exit_code == 2 and "over the limit of 50" in long.output
    store = Store.open(run_dir)
    for request in store.control.pending():
        store.control.mark_applied(request.id)
    store.close()
