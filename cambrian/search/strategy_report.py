"""The report's strategy sections (``cambrian report``): the search phases with the steering
inside them and the strategy-niche map of a stored run, in the report's section format
(``cambrian/trace/templates/report.html``). Runs that used neither get no section."""

from __future__ import annotations

import time
from typing import Any

from cambrian.core.objective import Objective
from cambrian.search.niches.view import niche_map, promote_after
from cambrian.search.phase_view import phase_timeline, steering_events
from cambrian.store.store import Store


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def _share(start: float, stop: float | None) -> str:
    return f"{100 * start:.0f}% → " + ("now" if stop is None else f"{100 * stop:.0f}%")


def strategy_sections(store: Store) -> list[dict[str, Any]]:
    info = store.runs.info()
    objective = Objective.of(info.direction)
    sections: list[dict[str, Any]] = []
    spans = phase_timeline(store)
    if spans:
        rows = [[span.phase, str(span.from_evaluated),
                 "now" if span.to_evaluated is None else str(span.to_evaluated),
                 _share(span.from_budget, span.to_budget), _fmt(span.best_at_start),
                 span.reason, str(span.recoveries), str(span.extensions)] for span in spans]
        parts: list[dict[str, Any]] = [{"kind": "grid", "head": [
            "phase", "from evaluation", "to", "budget", "best at its start", "why it began",
            "recoveries", "extensions"], "rows": rows}]
        steering = steering_events(store, limit=50)
        if steering:
            parts.append({"kind": "grid", "head": ["at", "steering"], "rows": [
                [time.strftime("%Y-%m-%d %H:%M", time.localtime(item["at"])), item["text"]]
                for item in steering]})
        sections.append({"id": "phases", "title": "Search phases", "parts": parts})
    niches = niche_map(store, objective, promote_after(info.config))
    if niches:
        rows = [[line.family, str(line.count), _fmt(line.best_score), f"#{line.best_id}",
                 line.key_idea or "—", ", ".join(f"#{i}" for i in line.elites)]
                for line in niches]
        sections.append({"id": "niches", "title": "Strategy niches", "parts": [
            {"kind": "grid", "head": ["family", "programs", "best", "candidate",
                                      "key idea of the best", "elites"], "rows": rows},
            {"kind": "note", "text": "Each correct program tagged by an LLM with its strategy "
                                     "family; a niche's elites are its best programs."}]})
    return sections
