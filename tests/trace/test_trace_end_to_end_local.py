"""Trace science end to end on a real run: circle packing evolved by the local 0.5B model, its
trace exported and imported back (same analyses), every edit labelled by the local model as the
taxonomy judge, the best program's tuning ceiling measured, and the HTML report opened in
headless Chromium, whose screenshot must show the plots. Slow (a few minutes): ``local_llm``."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cambrian.api import start
from cambrian.store.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "circle_packing"
JUDGE = "qwen2.5-coder-0.5b-instruct"
CLI = [sys.executable, "-m", "cambrian.cli"]
BROWSER = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))
                if p), None)
# The report's figures draw in these colours (trace/report_figures.py); its text and tables
# never use them, so finding them on the screenshot means the plots were rendered.
PLOT_COLOURS = {"correct/bars": (0x3B, 0x6F, 0xB6), "best": (0xE6, 0x7E, 0x22)}


def cli(*args: str) -> str:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.local_llm
@pytest.mark.skipif(BROWSER is None, reason="headless Chromium is not installed "
                                           "(apt-get install -y chromium)")
def test_a_local_run_analysed_end_to_end(tmp_path: Path):
    run_dir = tmp_path / "run"
    evolution = start(EXAMPLE, run_dir=run_dir, overrides=[
        "llm.models=[" + json.dumps({"provider": "local", "model": JUDGE}) + "]",
        "evolution.generations=3", "budget.max_llm_calls=12", "meta.enabled=false",
        "comprehension.enabled=false",
    ])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    store = Store.open(run_dir)
    children = [r for r in store.candidates.list("correct", "incorrect") if r.id != 1]
    store.close()
    assert children, "the local model produced no evaluated child to analyse"

    # Export and import: the imported run gives the same static and cycling statistics.
    cli("trace", "export", str(run_dir), str(tmp_path / "export"))
    cli("trace", "import", str(tmp_path / "export"), str(tmp_path / "imported"))
    assert cli("trace", "stats", str(run_dir)).replace(str(run_dir), "RUN") == \
        cli("trace", "stats", str(tmp_path / "imported")).replace(str(tmp_path / "imported"), "RUN")

    # The local model labels every edit; a second pass is served from the cache.
    cli("trace", "label", str(run_dir), "--provider", "local", "--model", JUDGE)
    taxonomy = json.loads((run_dir / "trace" / "taxonomy.json").read_text())
    assert {str(child.id) for child in children} <= set(taxonomy["labels"])
    again = cli("trace", "label", str(run_dir), "--provider", "local", "--model", JUDGE)
    assert "0 judge calls" in again and f"{len(taxonomy['labels'])} edits from the cache" in again

    # Tuning ceiling of the best program through the task's own evaluator.
    cli("trace", "tune", str(run_dir), "--budget", "6")
    tuning = json.loads((run_dir / "trace" / "tuning.json").read_text())
    assert tuning["tuned_score"] is None or tuning["tuned_score"] >= tuning["program_score"]

    # The report, with both analyses in it, rendered by a real browser.
    cli("report", str(run_dir))
    page = (run_dir / "report.html").read_text()
    assert 'class="placeholder"' not in page
    shot = tmp_path / "shot.png"
    subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--disable-background-networking", "--disable-component-update",
                    "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                    "--window-size=1100,4200", f"--screenshot={shot}",
                    (run_dir / "report.html").as_uri()],
                   capture_output=True, text=True, timeout=180, cwd=tmp_path)
    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=int)  # rows x columns x RGB
    rows_with = {name: np.flatnonzero((np.abs(pixels - colour) <= 24).all(axis=2).any(axis=1))
                 for name, colour in PLOT_COLOURS.items()}
    for name, rows in rows_with.items():
        assert len(rows) > 40, f"no {name} plot colour on the screenshot"
    # The plots sit one below the other: plot colour in several bands down the page.
    blue_rows = rows_with["correct/bars"]
    bands = 1 + int((np.diff(blue_rows) > 60).sum())
    assert bands >= 3, f"plot colour in only {bands} band(s) of the page"
