"""Render the report in headless Chromium and check that a person would see a real page.

Needs Debian's chromium (``apt-get install -y chromium``); skipped when it is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from trace_builders import LINEAGE_RUN, build_run

from cambrian.trace.report import write_report

BROWSER = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))
                if p), None)


@pytest.mark.skipif(BROWSER is None, reason="headless Chromium is not installed "
                                           "(apt-get install -y chromium)")
def test_report_renders_as_a_non_blank_page(tmp_path: Path):
    run_dir = build_run(tmp_path / "run", LINEAGE_RUN)
    report = write_report(run_dir, tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    completed = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1100,2600",
         f"--screenshot={shot}", report.as_uri()],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )
    assert shot.exists(), completed.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1100, 2600)
    colours = image.getcolors(maxcolors=1 << 22) or []
    # The page shows text, tables and plots: many colours, and plenty of non-white pixels in
    # both the top (summary) and the lower half (figures).
    assert len(colours) > 200
    for box in ((0, 0, 1100, 1300), (0, 1300, 1100, 2600)):
        part = image.crop(box)
        inked = sum(n for n, rgb in part.getcolors(maxcolors=1 << 22) or [] if sum(rgb) < 3 * 230)
        assert inked > 0.02 * part.width * part.height, box
