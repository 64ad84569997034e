"""Phases steer real proposals (a scripted model over HTTP, the counter task): the phase's
models are the only ones asked, each proposal's temperature is its intent's base temperature
times the phase's scale, the phase changes are stored, and `cambrian status` shows them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start
from cambrian.core.events import PhaseChanged
from cambrian.core.status import CandidateStatus
from cambrian.mutate.intents import INTENTS
from cambrian.store.store import Store


def test_phases_choose_models_and_temperatures(tmp_path: Path) -> None:
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        models = [llm.model_config(name="strong"), llm.model_config(name="cheap")]
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "evolution.generations=20", "llm.models=" + json.dumps(models),
            "llm.selection=fixed", "novelty.enabled=false", "meta.enabled=false",
            "phases.enabled=true", "phases.stagnation=100", "phases.extension=0",
            'phases.models={"exploration": ["strong"], "exploitation": ["strong"], '
            '"polishing": ["cheap"]}'])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    store = Store.open(tmp_path / "run")
    changes = store.events.of_type(PhaseChanged)
    assert [c.phase for c in changes] == ["comprehension", "exploration", "exploitation",
                                          "polishing"]
    children = [row for row in store.candidates.list(CandidateStatus.CORRECT,
                                                     CandidateStatus.INCORRECT) if row.id != 1]
    scales = (1.1, 0.85, 0.6)  # exploration, exploitation, polishing
    for row in children:
        base = INTENTS.get(row.notes["intent"]).temperature
        assert any(row.notes["temperature"] == pytest.approx(round(base * s, 3)) for s in scales)
    # Exploration and exploitation ask the strong model only; polishing the cheap one, cooler.
    cheap = [row for row in children if row.model == "cheap"]
    strong = [row for row in children if row.model == "strong"]
    assert cheap and strong and len(cheap) + len(strong) == len(children)
    assert all(row.notes["temperature"] == pytest.approx(
        round(INTENTS.get(row.notes["intent"]).temperature * 0.6, 3)) for row in cheap)
    assert min(row.id for row in cheap) > max(row.id for row in strong)
    store.close()
