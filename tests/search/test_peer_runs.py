"""Peers' task folders run unchanged through the whole loop (a real OpenEvolve-shaped folder with
its config.yaml, cascade and artifacts; a ShinkaEvolve-shaped one), their scores, costs and
events exported to a local MLflow store and W&B offline; a module the evaluation cannot import
stops the run before any LLM call."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM
from support.store_queries import sql, stored_events

from cambrian.api import start
from cambrian.core.outcomes import RunOutcome
from cambrian.search.context import RunAborted
from cambrian.store.store import Store

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peer_folders"
QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
         "mutation.derive_moves=false",  # no side call: the replies are scripted by index
         # and only change VALUE: no improvement step (its score and move they cannot write)
         "mutation.types=[tuning,local_fix,refinement,strategy,refactor,crossover]"]


def user_prompt(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def counter_replies(values: list[str]):
    """Set VALUE to the next of ``values``, in the format the prompt asks for."""
    def respond(messages: list[dict[str, str]], index: int) -> str:
        user = user_prompt(messages)
        current = re.search(r"VALUE = (\S+)", user).group(1)
        new = values[min(index, len(values) - 1)]
        if "SEARCH" in user.split("## Your task")[-1]:
            return (f"Change it\n<<<<<<< SEARCH\nVALUE = {current}\n=======\nVALUE = {new}\n"
                    ">>>>>>> REPLACE\n")
        return f"Change it\n```python\nVALUE = {new}\n\n\ndef value():\n    return VALUE\n```\n"
    return respond


def run(task: Path, run_dir: Path, llm: ScriptedLLM, *more: str):
    evolution = start(task, run_dir=run_dir, overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", *QUIET, *more])
    try:
        return asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def test_openevolve_folder_runs_unchanged_with_cascade_artifacts_and_tracking(tmp_path: Path):
    task = Path(shutil.copytree(PEERS / "openevolve_cascade", tmp_path / "task"))
    mlruns = tmp_path / "mlruns"
    with ScriptedLLM(counter_replies(["6", "int('crash')", "8"])) as llm:
        summary = run(task, tmp_path / "run", llm, "search.algorithm=hill-climb",
                      "evolution.max_parallel_evaluations=1",
                      f"tracking.mlflow.tracking_uri=file://{mlruns}",
                      "tracking.mlflow.experiment=peers", "tracking.wandb.mode=offline")
    # max_iterations: 3 in OpenEvolve's config.yaml is the budget.
    assert summary.outcome is RunOutcome.COMPLETED and summary.evaluations == 3
    store = Store.open(tmp_path / "run")
    notes = [e["payload"]["message"] for e in stored_events(store, "preflight_note")]
    assert notes[0].startswith("config.yaml is OpenEvolve's config")
    rows = {row.id: row for row in store.candidates.list()}
    assert rows[1].status == "correct" and rows[1].score == pytest.approx(0.1)
    by_value = {re.search(r"VALUE = (\S+)", row.source).group(1): row for row in rows.values()}
    assert by_value["6"].status == "correct" and by_value["6"].score == pytest.approx(0.6)
    crashed = by_value["int('crash')"]  # an exception is a failure, with its error
    assert crashed.status == "incorrect" and "ValueError" in crashed.error
    stages = sql(store, "SELECT stage FROM evaluations WHERE candidate_id=? ORDER BY id",
                 (by_value["6"].id,)).fetchall()
    assert [s for (s,) in stages] == ["stage1", "stage2", "main"]
    # The initial program's artifacts and cascade note are in the first proposal's prompt.
    first = user_prompt(llm.requests[0])
    assert "[artifact quick_check]\nstage 1 saw VALUE=1" in first
    assert "stopped after stage1" in first
    store.close()

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"file://{mlruns}")
    runs = client.search_runs([client.get_experiment_by_name("peers").experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert runs[0].data.params["evolution.generations"] == "3"
    assert runs[0].data.metrics["best_score"] == pytest.approx(0.8)
    history = client.get_metric_history(runs[0].info.run_id, "score")
    assert sorted(m.value for m in history) == pytest.approx([0.1, 0.6, 0.8])
    assert runs[0].data.metrics["llm_calls"] == 3
    assert runs[0].data.metrics["events.evaluated"] == 4
    offline = list((tmp_path / "run" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(offline) == 1 and b"best_score" in offline[0].read_bytes()


def test_shinka_folder_runs_unchanged(tmp_path: Path):
    task = Path(shutil.copytree(PEERS / "shinka_style", tmp_path / "task"))

    def respond(messages: list[dict[str, str]], index: int) -> str:
        user = user_prompt(messages)
        if "SEARCH" in user.split("## Your task")[-1]:
            return ("Bigger\n<<<<<<< SEARCH\n    return [seed, 1, 2]\n=======\n"
                    f"    return [seed, 1, 2, {10 * (index + 1)}]\n>>>>>>> REPLACE\n")
        return ("Bigger\n```python\ndef solve(seed):\n"
                f"    return [seed, 1, 2, {10 * (index + 1)}]\n```\n")

    with ScriptedLLM(respond) as llm:
        summary = run(task, tmp_path / "run", llm, "novelty.enabled=false")
    assert summary.evaluations == 2  # evo_config.num_generations
    assert summary.initial_score == pytest.approx(5.0)
    assert summary.best_score > 5.0


def test_a_module_the_evaluation_cannot_import_stops_the_run_before_any_llm_call(
        tmp_path: Path):
    task = Path(shutil.copytree(PEERS / "openevolve_cascade", tmp_path / "task"))
    evaluator = task / "evaluator.py"
    evaluator.write_text("import not_installed_anywhere_xyz\n" + evaluator.read_text())
    with ScriptedLLM(counter_replies(["6"])) as llm, pytest.raises(RunAborted) as aborted:
        run(task, tmp_path / "run", llm, "evolution.repair_initial=true")
    message = str(aborted.value)
    assert "cannot import the module 'not_installed_anywhere_xyz'" in message
    assert "evaluation.python" in message
    assert aborted.value.outcome is RunOutcome.NOTHING_EVALUATED
    assert llm.requests == []
