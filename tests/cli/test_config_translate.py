"""A peer's config file chosen with -c (OpenEvolve's second phase, a ShinkaEvolve run file of
another size) is translated with the same used/ignored report, and `cambrian config translate`
writes the Cambrian config it becomes, which then runs as it is."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import yaml
from support.scripted_llm import ScriptedLLM, write_counter_task
from typer.testing import CliRunner

from cambrian.api import resolve_config, start
from cambrian.cli import app
from cambrian.config import build_config, read_config_file
from cambrian.task.folder import peer_config

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peer_folders"
QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false"]
PHASE = {"max_iterations": 0, "random_seed": 3, "diff_based_evolution": True,
         "llm": {"primary_model": "gpt-4o-mini"},
         "prompt": {"system_message": "Phase {phase}: raise VALUE."},
         "evaluator": {"timeout": 0, "cascade_evaluation": False}}


def two_phases(tmp_path: Path) -> Path:
    root = write_counter_task(tmp_path / "phased")
    for phase, iterations, timeout in ((1, 2, 60), (2, 1, 90)):
        data = json.loads(json.dumps(PHASE))
        data["max_iterations"], data["evaluator"]["timeout"] = iterations, timeout
        data["prompt"]["system_message"] = f"Phase {phase}: raise VALUE."
        (root / f"config_phase_{phase}.yaml").write_text(yaml.safe_dump(data))
    return root


def test_the_second_phase_is_chosen_with_c(tmp_path: Path):
    root = two_phases(tmp_path)
    assert resolve_config(root).task.description == "Phase 1: raise VALUE."
    config = resolve_config(root, root / "config_phase_2.yaml")
    assert config.task.description == "Phase 2: raise VALUE."
    assert config.evaluation.timeout_s == 90.0 and config.evolution.generations == 1
    assert config.llm.models[0].model == "gpt-4o-mini"


def test_a_peer_file_given_with_c_runs_and_its_note_is_the_preflights(tmp_path: Path):
    root = two_phases(tmp_path)
    with ScriptedLLM(lambda messages, index: "no change") as llm:
        evolution = start(root, config=root / "config_phase_2.yaml", run_dir=tmp_path / "run",
                          overrides=["llm.models=[" + json.dumps(llm.model_config()) + "]",
                                     *QUIET])
        try:
            notes = evolution.ctx.task.notes
            assert notes[0].startswith("config_phase_2.yaml is OpenEvolve's config "
                                       "(config_phase_1.yaml: not read): used ")
            assert not any(n.startswith("config_phase_1.yaml") for n in notes)
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    assert summary.evaluations <= 1
    stored = read_config_file(tmp_path / "run" / "config.yaml")
    assert stored["task"]["description"] == "Phase 2: raise VALUE."


def test_config_translate_writes_a_config_that_loads(tmp_path: Path):
    root = Path(shutil.copytree(PEERS / "shinka_script", tmp_path / "shinka_script"))
    out = tmp_path / "cambrian.yaml"
    result = CliRunner().invoke(app, ["config", "translate", str(root / "run_evo.py"),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Wrote" in result.output and f"cambrian run {root} -c {out}" in result.output
    text = out.read_text()
    assert text.startswith("# Cambrian config translated from ShinkaEvolve's run_evo.py\n")
    assert "#   evo_config.num_generations -> evolution.generations (4)" in text
    data = read_config_file(out)
    config = build_config([data])
    assert config.evolution.generations == 4 and config.database.num_islands == 3
    # The written file is Cambrian's own: given with -c, it is not translated again.
    assert peer_config(tmp_path) is None
    assert resolve_config(root, out).task.description.startswith("You are an expert in simple")


def test_config_translate_prints_and_refuses_a_cambrian_config(tmp_path: Path):
    printed = CliRunner().invoke(app, ["config", "translate",
                                       str(PEERS / "openevolve_cascade" / "config.yaml")],
                                 terminal_width=200)
    assert printed.exit_code == 0
    assert "max_iterations -> evolution.generations (3)" in printed.output
    assert "generations: 3" in printed.output
    own = tmp_path / "mine.yaml"
    own.write_text("evolution:\n  generations: 2\n")
    refused = CliRunner().invoke(app, ["config", "translate", str(own)])
    assert refused.exit_code == 2
    assert "not an OpenEvolve or ShinkaEvolve config" in refused.output


def test_a_run_evo_task_prompt_reaches_the_models_system_message(tmp_path: Path):
    """ShinkaEvolve's circle packing keeps "the best known result" only in run_evo.py: the
    prompt Cambrian sends carries it, and the evaluator's docstring is no statement beside it."""
    root = Path(shutil.copytree(PEERS / "shinka_script", tmp_path / "shinka_script"))
    with ScriptedLLM(lambda messages, index: "no change") as llm:
        evolution = start(root, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", *QUIET,
            "evolution.generations=1", "mutation.derive_moves=false"])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    system = next(m["content"] for m in llm.requests[0] if m["role"] == "system")
    assert "## Task\nYou are an expert in simple sums. The best known result for the sum" in system
    assert "## Problem statement" not in system


def test_openevolves_second_phase_continues_the_first_ones_run(tmp_path: Path):
    """OpenEvolve's two phases: phase 2's config resumes phase 1's population, its
    max_iterations counted on from what phase 1 did."""
    from cambrian.api import resume
    from cambrian.store.store import Store

    root = two_phases(tmp_path)

    def raise_value(messages, index):
        user = next(m["content"] for m in messages if m["role"] == "user")
        return raise_reply(user, index)

    with ScriptedLLM(raise_value) as llm:
        sets = ["llm.models=[" + json.dumps(llm.model_config()) + "]", *QUIET,
                "mutation.derive_moves=false"]
        first = start(root, run_dir=tmp_path / "run", overrides=sets)  # config_phase_1.yaml
        try:
            assert asyncio.run(first.run()).evaluations == 2
        finally:
            first.store.close()
        second = resume(tmp_path / "run", config=root / "config_phase_2.yaml", overrides=sets)
        try:
            assert second.config.task.description == "Phase 2: raise VALUE."
            assert second.config.evolution.generations == 3  # 2 done + phase 2's 1
            assert second.config.evaluation.timeout_s == 90.0
            assert second.ctx.task.notes[0].startswith("config_phase_2.yaml is OpenEvolve's")
            assert asyncio.run(second.run()).evaluations == 3
        finally:
            second.store.close()
    with Store.open(tmp_path / "run") as store:
        assert store.runs.info().config["task"]["description"] == "Phase 2: raise VALUE."
    help_text = CliRunner().invoke(app, ["resume", "--help"], terminal_width=200).output
    assert "--config" in help_text and "second phase" in help_text


def raise_reply(user: str, index: int) -> str:
    import re

    current = re.search(r"VALUE = (\d+)", user.split("## Current program")[-1]).group(1)
    new = int(current) + index + 1
    if "SEARCH" in user.split("## Your task")[-1]:
        return f"Raise\n<<<<<<< SEARCH\nVALUE = {current}\n=======\nVALUE = {new}\n>>>>>>> REPLACE\n"
    return f"Raise\n```python\nVALUE = {new}\n```\n"
