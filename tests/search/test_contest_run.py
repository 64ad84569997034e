"""``cambrian run --search contest`` end to end with the scripted model answering mutation,
tagging and reflection prompts, on a task of two sub-problems: the strategy niches, the search
phases, a reflection, sub-problem steering and a combination by the task's combiner are all
stored, and ``cambrian status``, the report and the web UI's overview show them; a resume goes on
in the phase it was in."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from support.contest_task import reply, write_contest_task
from support.scripted_llm import ScriptedLLM

from cambrian.core.events import PhaseChanged, Reflection, SubsolutionsCombined
from cambrian.meta.strategy_tags import StrategyTagged
from cambrian.store.store import Store
from cambrian.ui.cache import read_ledger
from cambrian.ui.data import overview_panels, run_row

CLI = [sys.executable, "-m", "cambrian.cli"]


def cambrian(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)


def test_contest_search_shows_niches_phases_reflection_and_subproblems(tmp_path: Path):
    task = write_contest_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(reply) as llm:
        sets = ["--set", "llm.models=[" + json.dumps(llm.model_config()) + "]",
                "--set", "novelty.enabled=false", "--set", "meta.enabled=false"]
        first = cambrian("run", str(task), "--run-dir", str(run_dir), "-g", "12", "-q",
                         "--search", "contest", *sets)
        assert first.returncode == 0, first.stderr[-3000:]
        status = cambrian("status", str(run_dir))
        report = cambrian("report", str(run_dir), "-o", str(tmp_path / "report.html"))
        resumed = cambrian("resume", str(run_dir), "-g", "16", "-q")
        assert resumed.returncode == 0, resumed.stderr[-3000:]

    store = Store.open(run_dir)
    phases = [e.phase for e in store.events.of_type(PhaseChanged)]
    assert phases[:2] == ["comprehension", "exploration"] and len(phases) >= 3
    assert phases.count("comprehension") == 1  # the resume went on where it was
    assert store.events.of_type(StrategyTagged)
    assert store.events.of_type(Reflection)
    combined = store.events.of_type(SubsolutionsCombined)
    assert combined and combined[0].method == "combiner" and combined[0].child_id
    assert store.candidates.get(combined[0].child_id).operator == "combine"
    steered = [row for row in store.candidates.list() if row.notes.get("subproblem")]
    assert {row.notes["subproblem"] for row in steered} >= {"small", "large"}

    assert status.returncode == 0, status.stderr
    for shown in ("search phases", "exploration", "strategy niches", "self-reflection"):
        assert shown in status.stdout, shown
    # The LLM calls by what they were for: the proposals', the tagger's, the reflections'.
    flat = " ".join(status.stdout.replace("│", " ").split())  # cells wrap in a narrow table
    calls = re.search(r"LLM calls \d+ \(([^)]*)\)", flat)
    assert calls and {part.split()[0] for part in calls[1].split(", ")} >= {
        "mutation", "strategy_tag", "reflection"}, flat[:1500]
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report.html").read_text()
    for shown in ("Search phases", "exploration", "Strategy niches", "local search",
                  "Self-reflections", "combined by combiner"):
        assert shown in html, shown
    ledger = read_ledger(store)
    panels = overview_panels(store, run_row(store, "run", run_dir, "cambrian", ledger), ledger)
    assert [span["phase"] for span in panels.phases] == phases
    assert panels.niches and panels.reflections and panels.niche_shares["shares"]
    assert any("combined by combiner" in item["text"] for item in panels.steering)
    store.close()
