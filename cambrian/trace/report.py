"""One self-contained HTML page per run: figures inlined as base64 PNGs, no external resources.
The page is the Jinja2 template ``templates/report.html``; this module computes what it shows.

Sections whose data another command produces (the edit taxonomy of ``cambrian trace label`` in
``RUN_DIR/trace/taxonomy.json``, the tuning ceiling of ``cambrian trace tune`` in
``RUN_DIR/trace/tuning.json``) show a placeholder until that file exists.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from cambrian.trace import report_figures as figures
from cambrian.trace.cycling import CyclingReport, ScopeSummary, analyse_cycling
from cambrian.trace.extras import EXTRAS_DIR, TAXONOMY_FILE, TUNING_FILE
from cambrian.trace.extras import extras_dir as default_extras_dir
from cambrian.trace.loading import load_trace
from cambrian.trace.model import Trace
from cambrian.trace.report_files import files_section
from cambrian.trace.report_reflections import reflections_section
from cambrian.trace.static import StaticReport, analyse_static

_TEMPLATES = Path(__file__).with_name("templates")
_environment: jinja2.Environment | None = None

Part = dict[str, Any]  # one piece of a section: see templates/report.html


def _template() -> jinja2.Template:
    global _environment
    if _environment is None:
        _environment = jinja2.Environment(
            loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
            trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
            undefined=jinja2.StrictUndefined)
    return _environment.get_template("report.html")


def _fmt(value: Any, digits: int = 6) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _img(png: bytes, alt: str) -> Part:
    return {"kind": "figure", "alt": alt, "png": base64.b64encode(png).decode("ascii")}


def _table(rows: list[tuple[str, str]]) -> Part:
    return {"kind": "pairs", "rows": rows}


def _grid(head: list[str], rows: list[list[str]]) -> Part:
    return {"kind": "grid", "head": head, "rows": rows}


def _note(text: str) -> Part:
    return {"kind": "note", "text": text}


def _section(section_id: str, title: str, *parts: Part) -> dict[str, Any]:
    return {"id": section_id, "title": title, "parts": list(parts)}


def _placeholder(text: str) -> Part:
    return {"kind": "placeholder", "text": text}


def _read_json(path: Path) -> tuple[Any, str | None]:
    """(data, problem): data is None when the file is absent or unreadable."""
    if not path.exists():
        return None, None
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (OSError, ValueError) as exc:
        return None, f"{path} could not be read: {exc}"


def label_prevalence(taxonomy: dict[str, Any]) -> list[tuple[str, float]]:
    """(label, share of labelled edits carrying it), most frequent first (seed 001 §5.1)."""
    labels = taxonomy.get("labels") or {}
    labelled = [set(v) for v in labels.values() if isinstance(v, list) and v]
    counts: dict[str, int] = {}
    for edit_labels in labelled:
        for label in edit_labels:
            counts[str(label)] = counts.get(str(label), 0) + 1
    if not labelled:
        return []
    shares = ((label, n / len(labelled)) for label, n in counts.items())
    return sorted(shares, key=lambda kv: (-kv[1], kv[0]))


def _summary(trace: Trace, static: StaticReport, cycling: CyclingReport) -> Part:
    totals = trace.llm_totals()
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(trace.status_counts().items()))
    roots = [c for c in trace.evaluated() if trace.parent_of(c.id) is None]
    initial = roots[0].score if roots else None
    rows = [
        ("task", trace.run.task),
        ("framework", trace.run.framework),
        ("direction", trace.run.direction),
        ("candidates", f"{len(trace.candidates)} ({statuses})"),
        ("evaluated programs", str(len(static.programs))),
        ("initial score", _fmt(initial)),
        ("best score", f"{_fmt(static.best_score)} (candidate {_fmt(static.best_id)})"),
        ("LLM calls", str(int(totals["calls"]))),
        ("tokens (prompt / completion)",
         f"{int(totals['prompt_tokens'])} / {int(totals['completion_tokens'])}"),
        ("cost (USD)", f"{totals['cost_usd']:.4f}"),
        ("lineage depth of the best", _fmt(static.lineage_depth)),
        ("best found at (normalised iteration)", _fmt(static.normalised_best_iteration, 3)),
        ("evaluations on dead branches", _pct(static.dead_branch_share)),
        ("re-introduced added lines (lineage / run)",
         f"{_pct(cycling.lineage.share)} / {_pct(cycling.run.share)}"),
    ]
    return _table(rows)


def _cycling_table(cycling: CyclingReport) -> Part:
    def row(name: str, scope: ScopeSummary) -> list[str]:
        split = scope.split()
        return [name, str(scope.counts.added), _pct(scope.share), _pct(split["literal"]),
                _pct(split["tuning"]), _pct(split["trivial"]), _fmt(scope.slope, 3),
                _fmt(scope.median_span, 3)]

    head = ["scope", "added lines", "byte-identical re-introductions", "literal", "tuning",
            "trivial", "slope per iteration", "median span (iterations)"]
    return _grid(head, [row("lineage", cycling.lineage), row("run", cycling.run)])


def render_report(trace: Trace, extras_dir: Path | None = None,
                  extra_sections: Sequence[dict[str, Any]] = ()) -> str:
    """The report's HTML; ``extra_sections`` (in the template's section format) come last:
    views the caller builds from layers above this one, such as the search phases."""
    static = analyse_static(trace)
    cycling = analyse_cycling(trace)
    if extras_dir is None and trace.origin is not None:
        extras_dir = default_extras_dir(trace.origin)
    sections = [
        _section("summary", "Summary", _summary(trace, static, cycling)),
        _section("best-score", "Best score over evaluations",
                 _img(figures.best_score_figure(trace, static), "best score over evaluations")),
        _section("lineage-tree", "Lineage tree",
                 _img(figures.lineage_tree_figure(trace, static), "lineage tree"),
                 _note("Nodes are evaluated programs (x: iteration), coloured by score; the "
                       "final best's lineage is drawn in orange.")),
        _section("cycling", "Cycling: re-introduced deleted lines",
                 _img(figures.cycling_figure(cycling), "cycling rate over iterations"),
                 _cycling_table(cycling)),
        _section("program-size", "Program size and numeric literals",
                 _img(figures.program_size_figure(static), "lines of code and numeric literals")),
        _taxonomy_section(extras_dir),
        _tuning_section(extras_dir),
    ]
    reflected = reflections_section(trace)  # a Cambrian run's self-reflections
    if reflected is not None:
        sections.append(reflected)
    files = files_section(trace)  # programs of several files
    if files is not None:
        sections.append(files)
    sections.extend(extra_sections)
    return _template().render(title=f"Cambrian run report — {trace.run.task}",
                              run_id=trace.run.id, sections=sections)


def _taxonomy_section(extras_dir: Path | None) -> dict[str, Any]:
    title = "Edit types: prevalence and helpfulness"
    path = extras_dir / TAXONOMY_FILE if extras_dir else None
    data, problem = _read_json(path) if path else (None, None)
    prevalence = label_prevalence(data) if isinstance(data, dict) else []
    if not prevalence:
        return _section("label-prevalence", title, _placeholder(
            problem or f"No edit-taxonomy labels yet ({EXTRAS_DIR}/{TAXONOMY_FILE} in the run "
            "directory); run `cambrian trace label` to fill this section in."))
    assert isinstance(data, dict)
    odds = {row.get("label"): row for row in data.get("helpfulness") or []
            if isinstance(row, dict)}
    rows = []
    for label, share in prevalence:
        row = odds.get(label, {})
        interval = (f"{_fmt(row.get('ci_low'), 3)} – {_fmt(row.get('ci_high'), 3)}"
                    if row else "—")
        rows.append([label, _pct(share), _fmt(row.get("odds_ratio"), 3), interval])
    labelled = sum(1 for v in (data.get("labels") or {}).values() if v)
    note = (f"{labelled} labelled edits"
            + (f" of {data['edits']}" if isinstance(data.get("edits"), int) else "")
            + (f", judge {data['judge']}" if data.get("judge") else "")
            + ". Odds ratio: odds that an edit with the label improves on its parent over the "
            "odds for edits without it (Haldane-corrected; seed 001 §5.1).")
    table = _grid(["label", "prevalence", "odds ratio (improves)", "95% interval"], rows)
    return _section("label-prevalence", title,
                    _img(figures.label_prevalence_figure(prevalence), "edit-type prevalence"),
                    table, _note(note))


def _tuning_section(extras_dir: Path | None) -> dict[str, Any]:
    title = "Tuning ceiling"
    path = extras_dir / TUNING_FILE if extras_dir else None
    data, problem = _read_json(path) if path else (None, None)
    if not isinstance(data, dict):
        return _section("tuning-ceiling", title, _placeholder(
            problem or f"No tuning-ceiling result yet ({EXTRAS_DIR}/{TUNING_FILE} in the run "
            "directory); run `cambrian trace tune` to fill this section in."))
    rows = [(label, _fmt(data.get(key))) for key, label in (
        ("program_score", "program score"), ("tuned_score", "tuning ceiling (best of the search)"),
        ("run_best", "run's best score"))]
    for key, label in (("candidate_id", "tuned candidate"), ("knob_source", "knobs found by"),
                       ("defaults_match", "rewritten program reproduces the score"),
                       ("budget", "search evaluations"), ("stopped", "stopped early")):
        if data.get(key) not in (None, ""):
            rows.append((label, str(data[key])))
    values = data.get("best_values")
    if isinstance(values, dict) and values:
        rows.append(("best knob values", ", ".join(f"{k} = {_fmt(v)}" for k, v in values.items())))
    return _section("tuning-ceiling", title,
                    _img(figures.tuning_figure(data), "tuning ceiling"), _table(rows))


def write_report(source: Trace | str | Path, out_html: str | Path, *,
                 extras_dir: str | Path | None = None,
                 extra_sections: Sequence[dict[str, Any]] = ()) -> Path:
    """Write the HTML report of a run dir, any readable trace location, or an in-memory trace."""
    trace = source if isinstance(source, Trace) else load_trace(source)
    out = Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(trace, Path(extras_dir) if extras_dir else None,
                                 extra_sections), encoding="utf-8")
    return out
