"""The HTML report: one self-contained page with the expected sections and real PNG figures."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import pytest
from PIL import Image
from trace_builders import LINEAGE_RUN, build_run

from cambrian.trace import load_trace
from cambrian.trace.report import label_prevalence, write_report

IMAGE = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
SECTIONS = ("summary", "best-score", "lineage-tree", "cycling", "program-size",
            "label-prevalence", "tuning-ceiling")
TAXONOMY = {"labels": {"2": ["hyperparameter_tuning"],
                       "4": ["hyperparameter_tuning", "local_refinement"],
                       "6": ["bug_fix"], "5": []}}
TUNING = {"program_score": 2.0, "tuned_score": 3.5, "run_best": 4.0,
          "curve": [2.0, 2.4, 2.2, 3.1, 3.5, 3.0]}


def _section(page: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}">(.*?)</section>', page, re.DOTALL)
    assert match, f"section {section_id} missing"
    return match.group(1)


def _images(page: str) -> list[Image.Image]:
    images = []
    for data in IMAGE.findall(page):
        raw = base64.b64decode(data, validate=True)
        assert raw.startswith(b"\x89PNG\r\n\x1a\n")
        image = Image.open(io.BytesIO(raw))
        image.load()
        images.append(image.convert("RGB"))
    return images


def _is_drawing(image: Image.Image) -> bool:
    """More than a blank canvas: many colours and a fair share of non-white pixels."""
    colours = image.getcolors(maxcolors=1 << 20) or []
    inked = sum(n for n, rgb in colours if sum(rgb) < 3 * 235)
    return len(colours) > 20 and inked > 0.02 * image.width * image.height


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return build_run(tmp_path / "run", LINEAGE_RUN)


def test_report_with_every_section_filled(run_dir: Path):
    extras = run_dir / "trace"
    extras.mkdir()
    (extras / "taxonomy.json").write_text(json.dumps(TAXONOMY))
    (extras / "tuning.json").write_text(json.dumps(TUNING))
    page = write_report(run_dir, run_dir / "report.html").read_text()
    for section in SECTIONS:
        _section(page, section)
    assert 'class="placeholder"' not in page
    # Self-contained: no scripts, stylesheets or images fetched from elsewhere.
    assert "<script" not in page and "<link" not in page and 'src="http' not in page
    images = _images(page)
    assert len(images) == 6
    assert all(image.width > 300 and image.height > 150 for image in images)
    assert all(_is_drawing(image) for image in images)
    summary = _section(page, "summary")
    assert "hand-built" in summary and "4 (candidate 6)" in summary
    assert "correct: 6, patch_failed: 1" in summary and "40.0%" in summary  # dead branches
    cycling = _section(page, "cycling")
    assert "36.4%" in cycling and "45.5%" in cycling  # 4/11 lineage, 5/11 run-wide
    labels = _section(page, "label-prevalence")
    assert "hyperparameter_tuning" in labels and "66.7%" in labels
    assert "3.5" in _section(page, "tuning-ceiling")


def test_missing_extras_leave_placeholders(run_dir: Path, tmp_path: Path):
    page = write_report(load_trace(run_dir), tmp_path / "out" / "report.html").read_text()
    assert 'class="placeholder"' in _section(page, "label-prevalence")
    assert 'class="placeholder"' in _section(page, "tuning-ceiling")
    assert len(_images(page)) == 4


def test_unreadable_extras_are_reported_not_fatal(run_dir: Path, tmp_path: Path):
    extras = tmp_path / "elsewhere"
    extras.mkdir()
    (extras / "taxonomy.json").write_text("{not json")
    page = write_report(run_dir, tmp_path / "report.html", extras_dir=extras).read_text()
    assert "could not be read" in _section(page, "label-prevalence")


def test_label_prevalence_counts_each_labelled_edit_once():
    assert label_prevalence(TAXONOMY) == [("hyperparameter_tuning", pytest.approx(2 / 3)),
                                          ("bug_fix", pytest.approx(1 / 3)),
                                          ("local_refinement", pytest.approx(1 / 3))]
    assert label_prevalence({"labels": {}}) == []


def test_report_shows_helpfulness_and_the_tuning_details(run_dir: Path):
    from cambrian.trace.edits import collect_edits
    from cambrian.trace.extras import write_json
    from cambrian.trace.taxonomy_judge import Labelling, taxonomy_document

    trace = load_trace(run_dir)
    edits = collect_edits(trace)  # every edit of LINEAGE_RUN improves on its parent
    labelling = Labelling(judge="openai:scripted", rubric="test", labels={
        "2": ("pruning",), "3": ("local_refinement",), "4": ("composition",),
        "5": ("local_refinement",), "6": ("pruning", "bug_fix")})
    document = taxonomy_document(labelling, edits)
    assert document["improved"] == {"2": True, "3": True, "4": True, "5": True, "6": True}
    write_json(run_dir / "trace" / "taxonomy.json", document)
    write_json(run_dir / "trace" / "tuning.json", {
        **TUNING, "candidate_id": "6", "knob_source": "deterministic", "defaults_match": True,
        "best_values": {"step_size": 0.125, "iterations": 30}, "curve": [2.0, None, 3.5]})
    page = write_report(run_dir, run_dir / "report.html").read_text()
    labels = _section(page, "label-prevalence")
    # pruning: 2 of 5 labelled edits, table [[2, 0], [3, 0]] -> (2.5 * 0.5) / (0.5 * 3.5)
    assert "<td>pruning</td><td>40.0%</td><td>0.714</td>" in labels
    assert "5 labelled edits of 5, judge openai:scripted" in labels
    tuning = _section(page, "tuning-ceiling")
    assert "iterations = 30, step_size = 0.125" in tuning and "deterministic" in tuning
    assert len(_images(page)) == 6
