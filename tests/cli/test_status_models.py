"""`cambrian status` per model: calls, proposals that yielded a program, evaluated children that
were correct, children that beat their parent, tokens and cost; one real run with three scripted
models that behave differently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.scripted_llm import (
    ScriptedLLM,
    counter_reply,
    current_value,
    incrementing,
    write_counter_task,
)

import cambrian
from cambrian.mutate.candidate_checks import DUPLICATE_PREFIX
from cambrian.store.store import Store

PRICED = {"price_input_per_mtok": 1000.0, "price_output_per_mtok": 5000.0}  # $0.2 per call


def over_the_limit(messages: list[dict[str, str]], index: int) -> str:
    """A valid edit whose program the evaluator refuses (VALUE above the task's limit)."""
    wants_diff = "SEARCH" in messages[-1]["content"].split("## Your task")[-1]
    return counter_reply(current_value(messages), 5000 + index, wants_diff)


def test_status_reports_each_model(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as good, ScriptedLLM(over_the_limit) as over, \
            ScriptedLLM(lambda messages, index: "no code here") as mute:
        models = [good.model_config(name="good"), over.model_config(name="over", **PRICED),
                  mute.model_config(name="mute")]
        summary = cambrian.evolve(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=" + json.dumps(models), "llm.selection=fixed",
            "evolution.generations=9", "evolution.max_patch_attempts=1",
            "novelty.enabled=false", "meta.enabled=false"])
    status = cambrian.run_status(tmp_path / "run")
    rows = {m.model: m for m in status.models}
    assert set(rows) == {"good", "over", "mute"}
    assert sum(m.evaluated for m in rows.values()) == summary.evaluations == 9
    assert sum(m.calls for m in rows.values()) == status.llm_calls

    good_row, over_row, mute_row = rows["good"], rows["over"], rows["mute"]
    # Every "good" reply is a program, unless two proposals happened to reach the same VALUE.
    with Store.open(tmp_path / "run") as store:
        repeats = sum(1 for r in store.candidates.list("patch_failed")
                      if r.model == "good" and r.error.startswith(DUPLICATE_PREFIX))
    assert good_row.mutation_calls >= 1 and good_row.programs == good_row.mutation_calls - repeats
    assert good_row.correct == good_row.evaluated >= 1 and good_row.correct_rate == 1.0
    assert good_row.improved == good_row.correct  # every edit raises VALUE
    assert good_row.tokens == 120 * good_row.calls and good_row.cost_usd == 0.0

    assert over_row.evaluated >= 1 and over_row.correct == 0 and over_row.correct_rate == 0.0
    assert over_row.improvement_rate is None  # no correct child to compare
    assert abs(over_row.cost_usd - 0.2 * over_row.calls) < 1e-9

    assert mute_row.mutation_calls >= 1 and mute_row.programs == 0 and mute_row.program_rate == 0.0
    assert mute_row.evaluated == 0 and mute_row.correct_rate is None

    total_programs = sum(m.programs for m in rows.values())
    total_mutations = sum(m.mutation_calls for m in rows.values())
    assert status.proposal_success == total_programs / total_mutations

    printed = subprocess.run([sys.executable, "-m", "cambrian.cli", "status", str(tmp_path / "run")],
                             capture_output=True, text=True, check=True).stdout
    assert "LLM ledger per model" in printed
    lines = {name: next(line for line in printed.splitlines() if f" {name} " in line)
             for name in rows}
    assert f"0/{mute_row.mutation_calls} (0%)" in lines["mute"]
    assert f"{good_row.correct}/{good_row.evaluated} (100%)" in lines["good"]
    assert f"0/{over_row.evaluated} (0%)" in lines["over"]
    assert f"{over_row.cost_usd:.4f}" in lines["over"]
