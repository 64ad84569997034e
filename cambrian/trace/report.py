"""One self-contained HTML page per run: figures inlined as base64 PNGs, no external resources.

Sections whose data another command produces (the edit taxonomy of ``cambrian trace label`` in
``RUN_DIR/trace/taxonomy.json``, the tuning ceiling of ``cambrian trace tune`` in
``RUN_DIR/trace/tuning.json``) show a placeholder until that file exists.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from cambrian.trace import report_figures as figures
from cambrian.trace.cycling import CyclingReport, ScopeSummary, analyse_cycling
from cambrian.trace.extras import EXTRAS_DIR, TAXONOMY_FILE, TUNING_FILE
from cambrian.trace.extras import extras_dir as default_extras_dir
from cambrian.trace.model import Trace
from cambrian.trace.loading import load_trace
from cambrian.trace.static import StaticReport, analyse_static

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1000px; color: #1f2933; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.2rem; border-bottom: 1px solid #d9e2ec; padding-bottom: .3rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; }
td, th { border: 1px solid #d9e2ec; padding: .3rem .7rem; text-align: left; font-size: .92rem; }
th { background: #f0f4f8; }
img { max-width: 100%; height: auto; }
.placeholder { color: #7b8794; font-style: italic; background: #f5f7fa; padding: .8rem;
               border-left: 3px solid #cbd2d9; }
.muted { color: #7b8794; font-size: .9rem; }
"""


def _fmt(value: Any, digits: int = 6) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{section_id}"><h2>{html.escape(title)}</h2>\n{body}\n</section>'


def _placeholder(text: str) -> str:
    return f'<p class="placeholder">{html.escape(text)}</p>'


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


def _summary(trace: Trace, static: StaticReport, cycling: CyclingReport) -> str:
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


def _cycling_table(cycling: CyclingReport) -> str:
    def row(name: str, scope: ScopeSummary) -> str:
        split = scope.split()
        cells = [name, str(scope.counts.added), _pct(scope.share), _pct(split["literal"]),
                 _pct(split["tuning"]), _pct(split["trivial"]), _fmt(scope.slope, 3),
                 _fmt(scope.median_span, 3)]
        return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"

    head = ("<tr><th>scope</th><th>added lines</th><th>byte-identical re-introductions</th>"
            "<th>literal</th><th>tuning</th><th>trivial</th><th>slope per iteration</th>"
            "<th>median span (iterations)</th></tr>")
    return f"<table>{head}{row('lineage', cycling.lineage)}{row('run', cycling.run)}</table>"


def render_report(trace: Trace, extras_dir: Path | None = None) -> str:
    static = analyse_static(trace)
    cycling = analyse_cycling(trace)
    if extras_dir is None and trace.origin is not None:
        extras_dir = default_extras_dir(trace.origin)
    sections = [
        _section("summary", "Summary", _summary(trace, static, cycling)),
        _section("best-score", "Best score over evaluations",
                 _img(figures.best_score_figure(trace, static), "best score over evaluations")),
        _section("lineage-tree", "Lineage tree",
                 _img(figures.lineage_tree_figure(trace, static), "lineage tree")
                 + '<p class="muted">Nodes are evaluated programs (x: iteration), coloured by '
                 "score; the final best's lineage is drawn in orange.</p>"),
        _section("cycling", "Cycling: re-introduced deleted lines",
                 _img(figures.cycling_figure(cycling), "cycling rate over iterations")
                 + _cycling_table(cycling)),
        _section("program-size", "Program size and numeric literals",
                 _img(figures.program_size_figure(static), "lines of code and numeric literals")),
        _taxonomy_section(extras_dir),
        _tuning_section(extras_dir),
    ]
    title = f"Cambrian run report — {trace.run.task}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            f"<h1>{html.escape(title)}</h1>\n<p class=\"muted\">run {html.escape(trace.run.id)}"
            "</p>\n" + "\n".join(sections) + "\n</body></html>\n")


def _grid(head: list[str], rows: list[list[str]]) -> str:
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{header}</tr>{body}</table>"


def _taxonomy_section(extras_dir: Path | None) -> str:
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
    note = (f'<p class="muted">{labelled} labelled edits'
            + (f" of {data['edits']}" if isinstance(data.get("edits"), int) else "")
            + (f", judge {html.escape(str(data['judge']))}" if data.get("judge") else "")
            + ". Odds ratio: odds that an edit with the label improves on its parent over the "
            "odds for edits without it (Haldane-corrected; seed 001 §5.1).</p>")
    table = _grid(["label", "prevalence", "odds ratio (improves)", "95% interval"], rows)
    return _section("label-prevalence", title,
                    _img(figures.label_prevalence_figure(prevalence), "edit-type prevalence")
                    + table + note)


def _tuning_section(extras_dir: Path | None) -> str:
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
                    _img(figures.tuning_figure(data), "tuning ceiling") + _table(rows))


def write_report(source: Trace | str | Path, out_html: str | Path, *,
                 extras_dir: str | Path | None = None) -> Path:
    """Write the HTML report of a run dir, any readable trace location, or an in-memory trace."""
    trace = source if isinstance(source, Trace) else load_trace(source)
    out = Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(trace, Path(extras_dir) if extras_dir else None),
                   encoding="utf-8")
    return out
