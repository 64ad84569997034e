"""`cambrian status` shows how the bandit's arm probabilities moved during the run."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start
from cambrian.status import run_status, share_rows
from cambrian.store.store import Store


def test_share_rows_spreads_snapshots_and_keeps_the_latest():
    shares = [(i, {"a": i / 100}) for i in range(1, 31)]
    rows = share_rows(shares, max_rows=5)
    assert len(rows) == 5 and rows[0] == shares[0] and rows[-1] == shares[-1]
    assert share_rows(shares[:3]) == shares[:3]


def test_status_prints_arm_probabilities_over_time(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config(temperatures=[0.2, 0.9])) + "]",
            "evolution.generations=10", "novelty.enabled=false", "meta.enabled=false",
        ])
        asyncio.run(evolution.run())
        evolution.store.close()
    store = Store.open(tmp_path / "run")
    status = run_status(store)
    store.close()
    assert [pulls for pulls, _ in status.bandit_shares] == [5, 10]
    for _, shares in status.bandit_shares:
        assert set(shares) == {"scripted@0.2", "scripted@0.9"}
        assert abs(sum(shares.values()) - 1.0) < 1e-9
    printed = subprocess.run([sys.executable, "-m", "cambrian.cli", "status", str(tmp_path / "run")],
                             capture_output=True, text=True, check=True).stdout
    assert "LLM arm probabilities over time" in printed and "scripted@0.9" in printed
