"""The report's figures, rendered with matplotlib's Agg canvas straight to PNG bytes (no pyplot,
so the process-wide backend is left alone)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from cambrian.core.objective import MAXIMIZE, MINIMIZE
from cambrian.core.status import CandidateStatus
from cambrian.trace.cycling import CyclingReport
from cambrian.trace.model import Trace
from cambrian.trace.static import StaticReport

WIDTH, HEIGHT, DPI = 9.0, 4.2, 100
CORRECT_COLOUR, FAILED_COLOUR, BEST_COLOUR = "#3b6fb6", "#c0392b", "#e67e22"


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def _new(height: float = HEIGHT) -> tuple[Figure, Any]:
    figure = Figure(figsize=(WIDTH, height), dpi=DPI)
    return figure, figure.add_subplot(1, 1, 1)


def best_score_figure(trace: Trace, static: StaticReport) -> bytes:
    figure, axes = _new()
    correct = [(p.evaluation_index, p.score) for p in static.programs
               if p.status is CandidateStatus.CORRECT and p.score is not None]
    failed = [(p.evaluation_index, p.score) for p in static.programs
              if p.status is not CandidateStatus.CORRECT and p.score is not None]
    steps = [(i, s) for i, s in static.best_so_far if s is not None]
    if steps:
        axes.step(*zip(*steps), where="post", color=BEST_COLOUR, linewidth=2, zorder=1,
                  label="best so far")
    if correct:
        axes.scatter(*zip(*correct), s=22, color=CORRECT_COLOUR, alpha=0.75, zorder=2,
                     label="evaluated (correct)")
    if failed:
        axes.scatter(*zip(*failed), s=22, marker="x", color=FAILED_COLOUR, alpha=0.75, zorder=2,
                     label="evaluated (incorrect)")
    axes.set_xlabel("evaluation")
    axes.set_ylabel(f"score ({trace.run.direction})")
    axes.grid(alpha=0.3)
    if correct or failed:
        axes.legend(loc="best", fontsize=8)
    return _png(figure)


def _tree_layout(trace: Trace, nodes: set[str]) -> dict[str, tuple[float, float]]:
    """x = iteration; y = leaf order of a depth-first walk, parents centred on their children."""
    children: dict[str | None, list[str]] = {}
    for candidate in trace.in_time_order():
        if candidate.id in nodes:
            parent = trace.parent_of(candidate.id)
            children.setdefault(parent if parent in nodes else None, []).append(candidate.id)
    y: dict[str, float] = {}
    next_leaf = 0.0
    for root in children.get(None, []):
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            kids = children.get(node, [])
            if done:
                y[node] = sum(y[k] for k in kids) / len(kids)
            elif not kids:
                y[node] = next_leaf
                next_leaf += 1
            else:
                stack.append((node, True))
                stack.extend((k, False) for k in reversed(kids))
    return {n: (float(trace.candidate(n).iteration), y[n]) for n in y}


def lineage_tree_figure(trace: Trace, static: StaticReport) -> bytes:
    nodes = {c.id for c in trace.evaluated()}
    complete: set[str] = set()  # nodes whose whole ancestry is in ``nodes``
    for candidate_id in list(nodes):  # each ancestry walked once, not once per descendant
        path, current = [], candidate_id
        while current is not None and current not in complete and current not in path:
            path.append(current)
            current = trace.parent_of(current)
        nodes.update(path)
        complete.update(path)
    position = _tree_layout(trace, nodes)
    figure, axes = _new(height=max(HEIGHT, min(12.0, 2.0 + 0.04 * len(position))))
    best_lineage = set(static.best_lineage)
    segments: list[list[tuple[float, float]]] = []
    best_segments: list[list[tuple[float, float]]] = []
    for node, (x, y) in position.items():
        parent = trace.parent_of(node)
        if parent in position:
            segment = [position[parent], (x, y)]
            (best_segments if node in best_lineage and parent in best_lineage
             else segments).append(segment)
    axes.add_collection(LineCollection(segments, colors="#9aa5b1", linewidths=0.6, zorder=1))
    axes.add_collection(LineCollection(best_segments, colors=BEST_COLOUR, linewidths=2.4, zorder=2))
    scored: list[tuple[str, float]] = []
    for node in position:
        candidate = trace.candidate(node)
        if candidate.status == "correct" and candidate.score is not None:
            scored.append((node, candidate.score))
    scored_ids = {n for n, _ in scored}
    others = [n for n in position if n not in scored_ids]
    if scored:
        values = [s for _, s in scored]
        low, high = min(values), max(values)
        norm = Normalize(low, high if high > low else low + 1)
        points = axes.scatter([position[n][0] for n, _ in scored],
                              [position[n][1] for n, _ in scored],
                              c=values, cmap="viridis", norm=norm, s=36, zorder=3,
                              edgecolors=["#e67e22" if n in best_lineage else "none"
                                          for n, _ in scored], linewidths=1.2)
        figure.colorbar(points, ax=axes, label="score")
    if others:
        axes.scatter([position[n][0] for n in others], [position[n][1] for n in others],
                     marker="x", s=16, color=FAILED_COLOUR, zorder=3, label="incorrect")
        axes.legend(loc="best", fontsize=8)
    if static.best_id in position:
        bx, by = position[static.best_id]
        axes.scatter([bx], [by], marker="*", s=220, color=BEST_COLOUR, edgecolors="black",
                     zorder=4)
    axes.autoscale()
    axes.set_xlabel("iteration")
    axes.set_yticks([])
    axes.set_title("lineage tree (best lineage highlighted)", fontsize=10)
    return _png(figure)


def _rolling_mean(values: Sequence[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def cycling_figure(cycling: CyclingReport) -> bytes:
    figure, axes = _new()
    for scope, colour, marker in (("lineage", CORRECT_COLOUR, "o"), ("run", "#7f8c8d", ".")):
        points = [(e.iteration, getattr(e, scope).share) for e in cycling.edits
                  if getattr(e, scope).added]
        if not points:
            continue
        xs, ys = zip(*points)
        axes.scatter(xs, ys, s=14, marker=marker, color=colour, alpha=0.6)
        window = max(3, len(points) // 20)
        axes.plot(xs, _rolling_mean(ys, window), color=colour, linewidth=2,
                  label=f"{scope} scope (rolling mean, {window} edits)")
    axes.set_ylim(-0.03, 1.03)
    axes.set_xlabel("iteration")
    axes.set_ylabel("share of added lines re-introduced")
    axes.grid(alpha=0.3)
    if cycling.edits:
        axes.legend(loc="upper left", fontsize=8)
    return _png(figure)


def program_size_figure(static: StaticReport) -> bytes:
    figure = Figure(figsize=(WIDTH, HEIGHT * 1.3), dpi=DPI)
    loc_axes, literal_axes = figure.subplots(2, 1, sharex=True)
    xs = [p.evaluation_index for p in static.programs]
    for axes, values, colour, label in (
        (loc_axes, [p.loc for p in static.programs], CORRECT_COLOUR, "lines of code"),
        (literal_axes, [p.numeric_literals for p in static.programs], BEST_COLOUR,
         "numeric literals"),
    ):
        axes.plot(xs, values, color=colour, marker=".", linewidth=1)
        axes.set_ylabel(label)
        axes.grid(alpha=0.3)
    literal_axes.set_xlabel("evaluation")
    return _png(figure)


def label_prevalence_figure(prevalence: list[tuple[str, float]]) -> bytes:
    figure, axes = _new(height=max(2.5, 0.4 * len(prevalence) + 1))
    labels = [label for label, _ in reversed(prevalence)]
    axes.barh(labels, [share for _, share in reversed(prevalence)], color=CORRECT_COLOUR)
    axes.set_xlabel("share of labelled edits")
    axes.set_xlim(0, 1)
    axes.grid(axis="x", alpha=0.3)
    return _png(figure)


def tuning_figure(tuning: dict[str, Any]) -> bytes:
    figure, axes = _new()
    raw = tuning.get("curve") or []
    points = [(i, float(v)) for i, v in enumerate(raw)
              if isinstance(v, (int, float)) and not isinstance(v, bool)]
    failed = [i for i, v in enumerate(raw) if v is None]
    if points:
        axes.plot(*zip(*points), marker=".", linestyle="none", color=CORRECT_COLOUR,
                  label="tuning evaluations")
        objective = MINIMIZE if tuning.get("direction") == "minimize" else MAXIMIZE
        running: list[tuple[int, float]] = []
        for index, value in points:
            if not running or objective.better(value, running[-1][1]):
                running.append((index, value))
            else:
                running.append((index, running[-1][1]))
        axes.step(*zip(*running), where="post", color=CORRECT_COLOUR, linewidth=1.5, alpha=0.7,
                  label="best so far")
    if failed:
        low = min((v for _, v in points), default=0.0)
        axes.scatter(failed, [low] * len(failed), marker="x", color=FAILED_COLOUR,
                     label="failed evaluation")
    for key, colour, style in (("program_score", "#7f8c8d", "--"),
                               ("tuned_score", CORRECT_COLOUR, "-"),
                               ("run_best", BEST_COLOUR, ":")):
        value = tuning.get(key)
        if isinstance(value, (int, float)):
            axes.axhline(float(value), color=colour, linestyle=style, label=f"{key} = {value:.6g}")
    axes.set_xlabel("tuning evaluation (0: the program's own values)")
    axes.set_ylabel("score")
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize=8)
    return _png(figure)
