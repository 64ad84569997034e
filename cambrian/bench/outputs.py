"""The benchmark's files: results.json (everything), results.md (the table) and
best_vs_evals.png (mean best-so-far against evaluations, one panel per task)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from cambrian.bench.aggregate import Spread, VariantTaskSummary
from cambrian.bench.metrics import RunRecord
from cambrian.bench.spec import BenchSpec

RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
CURVES_PNG = "best_vs_evals.png"


def fmt(value: float | None, digits: int = 6) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def fmt_spread(spread: Spread, digits: int = 6) -> str:
    if spread.mean is None:
        return "—"
    mean = fmt(spread.mean, digits)
    return f"{mean} ± {fmt(spread.std, digits)}" if spread.n > 1 else mean


def fmt_rate(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def fmt_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes < 60 else f"{minutes / 60:.1f} h"


def table_columns(checkpoints: tuple[float, ...], compact: bool = False) -> list[str]:
    """Column headers; ``compact`` ones fit a terminal table."""
    middle = [f"{'' if compact else 'best '}@{100 * f:.0f}%" for f in checkpoints if f < 1]
    if compact:
        return ["variant", "task", "runs", "final best", *middle, "success", "calls/run",
                "time/run"]
    return ["variant", "task", "runs", "final best (mean ± std)", *middle, "proposal success",
            "LLM calls / run", "wall time / run"]


def table_row(summary: VariantTaskSummary, digits: int = 6) -> list[str]:
    runs = str(summary.runs)
    notes = []
    if summary.failed_runs:
        notes.append(f"{summary.failed_runs} failed")
    if summary.stopped_early:
        notes.append(f"{summary.stopped_early} stopped early")
    if notes:
        runs += f" ({', '.join(notes)})"
    middle = [fmt_spread(c.best, digits) for c in summary.checkpoints if c.fraction < 1]
    return [summary.variant, summary.task, runs, fmt_spread(summary.final_best, digits), *middle,
            fmt_rate(summary.proposal_success_rate), f"{summary.llm_calls_mean:.1f}",
            fmt_seconds(summary.wall_time_s_mean)]


def spec_json(spec: BenchSpec) -> dict[str, Any]:
    return {
        "variants": {v.name: list(v.overrides) for v in spec.variants},
        "tasks": [str(d) for d in spec.task_dirs],
        "budget": spec.budget,
        "seeds": list(range(spec.seeds)),
        "overrides": list(spec.overrides),
        "checkpoints": list(spec.checkpoints),
    }


def write_json(path: Path, spec: BenchSpec, records: list[RunRecord],
               summaries: list[VariantTaskSummary]) -> None:
    payload = {
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "spec": spec_json(spec),
        "summaries": [s.to_json() for s in summaries],
        "runs": [r.to_json() for r in records],
    }
    path.write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")


def markdown_table(spec: BenchSpec, summaries: list[VariantTaskSummary]) -> str:
    columns = table_columns(spec.checkpoints)
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(["---"] * len(columns)) + "|"]
    lines += ["| " + " | ".join(table_row(s)) + " |" for s in summaries]
    return "\n".join(lines)


def write_markdown(path: Path, spec: BenchSpec, summaries: list[VariantTaskSummary]) -> None:
    directions = sorted({f"{s.task}: {s.direction}" for s in summaries})
    settings = ", ".join(f"`{o}`" for o in spec.overrides) or "none"
    text = [
        "# Benchmark results", "",
        f"Budget: {spec.budget} evaluated children per run; seeds: {spec.seeds}; "
        f"overrides for every run: {settings}.",
        f"Directions: {'; '.join(directions)}.", "",
        markdown_table(spec, summaries), "",
        "Best scores are best-so-far in the task's direction, mean ± standard deviation over "
        "seeds; `best @p%` is the best after that share of the budget. Proposal success is "
        "correct children over all proposed children (failed patches, rejected and duplicate "
        "proposals included). Wall time is the time the runs were active.", "",
        "Variants:", "",
        *[f"- `{v.name}`: {', '.join(f'`{o}`' for o in v.overrides) or 'defaults'}"
          for v in spec.variants],
        "",
    ]
    path.write_text("\n".join(text))


def _series(spreads: list[Spread], key: str) -> list[float]:
    return [float("nan") if getattr(s, key) is None else float(getattr(s, key)) for s in spreads]


def plot_curves(path: Path, summaries: list[VariantTaskSummary]) -> None:
    tasks = list(dict.fromkeys(s.task for s in summaries))
    figure = Figure(figsize=(5.5 * max(1, len(tasks)), 4.2), dpi=110)
    axes = figure.subplots(1, len(tasks), squeeze=False)[0]
    for axis, task in zip(axes, tasks):
        direction = next(s.direction for s in summaries if s.task == task)
        for summary in (s for s in summaries if s.task == task):
            x = list(range(len(summary.curve)))
            line, = axis.plot(x, _series(summary.curve, "mean"), label=summary.variant, lw=1.8,
                              drawstyle="steps-post")
            axis.fill_between(x, _series(summary.curve, "low"), _series(summary.curve, "high"),
                              color=line.get_color(), alpha=0.18, lw=0, step="post")
        axis.set_title(f"{task} ({direction})")
        axis.set_xlabel("evaluated children")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_ylabel("best score so far")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("mean best-so-far over seeds (band: min–max)", fontsize=10)
    figure.tight_layout()
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png")


def write_outputs(out_dir: Path, spec: BenchSpec, records: list[RunRecord],
                  summaries: list[VariantTaskSummary]) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"json": out_dir / RESULTS_JSON, "markdown": out_dir / RESULTS_MD,
             "plot": out_dir / CURVES_PNG}
    write_json(files["json"], spec, records, summaries)
    write_markdown(files["markdown"], spec, summaries)
    plot_curves(files["plot"], summaries)
    return files
