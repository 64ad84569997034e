"""The report's section on the files of a program of several files: how often the evaluated
children changed each file, how often such a change beat the parent, and which files the
best program's lineage changed. A run of one-file programs has no such section. It reads the
trace's programs only, so an imported trace of another framework gets it too."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cambrian.task.program_files import changed_paths, is_bundle, split_files
from cambrian.trace.model import Trace


def file_changes(trace: Trace) -> list[tuple[str, int, int, int]]:
    """(path, evaluated children that changed it, of them better than their parent, changes in
    the final best's lineage), per file of the run's programs; empty for one-file programs."""
    evaluated = [c for c in trace.evaluated() if c.source is not None]
    if not any(is_bundle(c.source or "") for c in evaluated):
        return []
    changed: Counter[str] = Counter()
    improved: Counter[str] = Counter()
    in_best: Counter[str] = Counter()
    best = trace.best()
    lineage = set([best.id, *trace.ancestors(best.id)]) if best is not None else set()
    order: list[str] = []
    for child in evaluated:
        parent_id = trace.parent_of(child.id)
        parent = trace.candidate(parent_id) if parent_id is not None else None
        for file in split_files(child.source or ""):
            if file.path not in order:
                order.append(file.path)
        if parent is None or parent.source is None:
            continue
        better = (child.status == "correct" and child.score is not None
                  and parent.score is not None and trace.better(child.score, parent.score))
        for path in changed_paths(parent.source, child.source or ""):
            changed[path] += 1
            improved[path] += better
            in_best[path] += child.id in lineage
    return [(path, changed[path], improved[path], in_best[path]) for path in order]


def files_section(trace: Trace) -> dict[str, Any] | None:
    """A report section (see ``templates/report.html``); None for a run of one-file programs."""
    rows = file_changes(trace)
    if not rows:
        return None
    return {"id": "files", "title": "Files of the program", "parts": [
        {"kind": "grid", "head": ["file", "children that changed it", "of them better than "
                                  "their parent", "changes in the best's lineage"],
         "rows": [[path, str(n), str(better), str(best)] for path, n, better, best in rows]},
        {"kind": "note", "text": "A child may change several files; a file no child changed "
                                 "has no EVOLVE-BLOCK or was left as it was."},
    ]}
