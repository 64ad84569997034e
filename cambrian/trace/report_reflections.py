"""The report's self-reflection section: what the run's reflections recommended, and when
(``reflection`` events of a Cambrian run store; other traces have none, and no section)."""

from __future__ import annotations

import time
from typing import Any

from cambrian.store.database import STORE_FILENAME
from cambrian.store.reflections import reflections
from cambrian.store.store import Store, StoreError
from cambrian.trace.model import Trace


def reflections_section(trace: Trace) -> dict[str, Any] | None:
    """A report section (see ``templates/report.html``) listing every reflection's
    recommendations; None when the trace is not a Cambrian run or the run has none."""
    origin = trace.origin
    if trace.run.framework != "cambrian" or origin is None:
        return None
    path = origin / STORE_FILENAME if origin.is_dir() else origin
    if not path.is_file():
        return None
    try:
        with Store.open(path, read_only=True) as store:
            found = reflections(store)
    except StoreError:  # a store this version cannot read unmigrated: no section
        return None
    if not found:
        return None
    rows = []
    for at, reflection in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
        for index, item in enumerate(reflection.items(), 1):
            rows.append([str(reflection.evaluated), when, str(index), item.action, item.text,
                         item.intent or "—"])
    latest = found[-1][1]
    return {"id": "reflections", "title": "Self-reflections", "parts": [
        {"kind": "grid", "head": ["after evaluations", "at", "#", "action", "recommendation",
                                  "intent"], "rows": rows},
        {"kind": "note", "text": "Every reflection.interval evaluations an LLM read the run's "
                                 "statistics and recommended intents to favour, things to avoid "
                                 "and ideas to try. The statistics of the latest one: "
                                 + latest.summary},
    ]}
