"""Time the trace analyses on a synthetic run of 10,000 edits: static, cycling, the diffs the
edit taxonomy labels, export/import, the report, and the deletion-aware search helpers the engine
calls per proposal (``cambrian/search/recycling.py``: the deletion filter's check of a child and
the deletion-history prompt note, both over the lineage read from the run store).

The synthetic run imitates what evolution does to a program: numeric constants are retuned from a
small set of values (so old values come back), lines are deleted, deleted lines are re-introduced
(from the lineage's own history or anywhere in the run), and new lines are written. Programs stay
between 80 and 200 lines. Parents are drawn mostly from the best recent programs, which yields
long lineages plus many dead branches.

    .venv/bin/python benchmarks/trace_speed.py [--edits 10000] [--seed 0]

Prints one timing per analysis; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from cambrian.config import TraceFeedbackConfig
from cambrian.lang.lines import line_diff
from cambrian.search.recycling import DeletionFilter, deletion_history_note
from cambrian.store.store import Store
from cambrian.trace.cycling import analyse_cycling, lineage_deletions
from cambrian.trace.deletion import (
    deleted_lines_in_lineage,
    deletion_history_text,
    reintroduction_share,
)
from cambrian.trace.edits import collect_edits
from cambrian.trace.export import export_trace
from cambrian.trace.importers.evotrace import read_exported_trace
from cambrian.trace.model import (
    CandidateRecord,
    ContextRecord,
    EdgeRecord,
    EvaluationRecord,
    RunRecord,
    Trace,
)
from cambrian.trace.report import write_report
from cambrian.trace.static import analyse_static
from cambrian.trace.store_lineage import StoreLineage
from cambrian.trace.to_store import import_to_store

T = TypeVar("T")
VALUES = ("0.1", "0.2", "0.25", "0.5", "1.0", "2", "10", "100", "0.99", "0.999")
SYSTEM_PROMPT = "You are an expert Python programmer improving a program step by step."


def _statement(rng: random.Random, serial: int) -> str:
    kind = rng.randrange(4)
    name = f"v{serial}"
    if kind == 0:
        return f"    {name} = {rng.choice(VALUES)}  # knob {serial}"
    if kind == 1:
        return f"    {name} = helper(x, {rng.choice(VALUES)}) * {rng.choice(VALUES)}"
    if kind == 2:
        return f"    if x > {rng.choice(VALUES)}: x = x * {rng.choice(VALUES)}"
    return f"    # step {serial}: adjust the schedule"


def _seed_program(rng: random.Random, counter: list[int]) -> list[str]:
    lines = ["import math", "", "def helper(x, k):", "    return math.sin(x) * k", "",
             "def solve(x):"]
    while len(lines) < 120:
        counter[0] += 1
        lines.append(_statement(rng, counter[0]))
    lines.append("    return x")
    return lines


def _mutate(rng: random.Random, lines: list[str], graveyard: list[str], run_deleted: list[str],
            counter: list[int]) -> tuple[list[str], list[str]]:
    """Returns the child's lines and the lines it deleted."""
    child = list(lines)
    deleted: list[str] = []
    body = range(6, len(child) - 1)
    for _ in range(rng.randint(1, 4)):
        action = rng.random()
        index = rng.choice(body) if len(body) else 6
        if action < 0.4:  # retune a constant from the small value set
            line = child[index]
            for value in VALUES:
                if value in line:
                    deleted.append(line)
                    child[index] = line.replace(value, rng.choice(VALUES), 1)
                    break
        elif action < 0.6 and len(child) > 80:
            deleted.append(child.pop(index))
        elif action < 0.75 and graveyard:  # bring back a line this lineage deleted
            child.insert(index, rng.choice(graveyard[-10:]))
        elif action < 0.85 and run_deleted:  # bring back a line deleted anywhere
            child.insert(index, rng.choice(run_deleted))
        elif len(child) < 200:
            counter[0] += 1
            child.insert(index, _statement(rng, counter[0]))
        body = range(6, len(child) - 1)
    while len(child) > 200:
        deleted.append(child.pop(rng.choice(range(6, len(child) - 1))))
    while len(child) < 80:
        counter[0] += 1
        child.insert(len(child) - 1, _statement(rng, counter[0]))
    return child, deleted


def synthetic_trace(edits: int, seed: int) -> Trace:
    rng = random.Random(seed)
    counter = [0]
    programs: dict[str, list[str]] = {"1": _seed_program(rng, counter)}
    graveyards: dict[str, list[str]] = {"1": []}
    scores: dict[str, float] = {"1": 1.0}
    run_deleted: list[str] = []
    candidates = [CandidateRecord(id="1", iteration=0, parent_id=None, status="correct",
                                  source="\n".join(programs["1"]) + "\n", language="python",
                                  operator="init", score=1.0, created_at=0.0)]
    evaluations = [EvaluationRecord(id="1", candidate_id="1", stage="main", status="ok",
                                    combined_score=1.0)]
    contexts: list[ContextRecord] = []
    edge_rows: list[EdgeRecord] = []
    for iteration in range(1, edits + 1):
        correct_ids = [c.id for c in candidates[-60:] if c.status == "correct"]
        if rng.random() < 0.7:
            parent = max(rng.sample(correct_ids, min(5, len(correct_ids))), key=scores.__getitem__)
        else:
            parent = rng.choice(correct_ids)
        child_lines, deleted = _mutate(rng, programs[parent], graveyards[parent], run_deleted,
                                       counter)
        child_id = str(iteration + 1)
        programs[child_id] = child_lines
        graveyards[child_id] = (graveyards[parent] + deleted)[-200:]
        run_deleted = (run_deleted + deleted)[-100:]
        ok = rng.random() < 0.9
        score = scores[parent] + rng.gauss(0.0, 0.05) if ok else None
        if score is not None:
            scores[child_id] = score
        source = "\n".join(child_lines) + "\n"
        contexts.append(ContextRecord(
            id=child_id, purpose="mutation", model="synthetic", provider="none",
            messages=[{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": "## Current program\n"
                       + "\n".join(programs[parent]) + "\n## Your task\nImprove it."}],
            response_text=f"Edit {iteration}\n```python\n{source}```",
            prompt_tokens=1500, completion_tokens=400, cost_usd=0.002, created_at=iteration,
        ))
        candidates.append(CandidateRecord(
            id=child_id, iteration=iteration, parent_id=parent,
            status="correct" if ok else "incorrect", source=source, language="python",
            operator="diff", model="synthetic", context_id=child_id, score=score,
            created_at=float(iteration)))
        evaluations.append(EvaluationRecord(
            id=child_id, candidate_id=child_id, stage="main", status="ok" if ok else "incorrect",
            combined_score=score, duration_s=0.1, created_at=float(iteration)))
        edge_rows.append(EdgeRecord(parent, child_id, "parent", "diff"))
    run = RunRecord(id="synthetic", task="synthetic", framework="cambrian", direction="maximize",
                    language="python", config={"evolution": {"generations": edits}}, seed=seed)
    return Trace(run=run, candidates=candidates, evaluations=evaluations, edges=edge_rows,
                 contexts=contexts)


def timed(label: str, action: Callable[[], T]) -> T:
    started = time.perf_counter()
    result = action()
    print(f"{label:<40} {time.perf_counter() - started:8.2f} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    trace = timed(f"build synthetic trace ({args.edits} edits)",
                  lambda: synthetic_trace(args.edits, args.seed))
    sizes = [len((c.source or "").splitlines()) for c in trace.candidates]
    print(f"{'':<40} programs of {min(sizes)}-{max(sizes)} lines, "
          f"mean {sum(sizes) / len(sizes):.0f}")
    static = timed("static analysis", lambda: analyse_static(trace))
    line_diff.cache_clear()
    cycling = timed("cycling analysis (both scopes)", lambda: analyse_cycling(trace))
    print(f"{'':<40} best lineage depth {static.lineage_depth}, dead branches "
          f"{static.dead_branch_share:.0%}, re-introduced {cycling.lineage.share:.1%} (lineage) / "
          f"{cycling.run.share:.1%} (run), median span {cycling.lineage.median_span}")
    edits = timed("edit diffs for the taxonomy judge", lambda: collect_edits(trace))
    print(f"{'':<40} {len(edits)} edits, {len({e.diff_sha256 for e in edits})} distinct diffs")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        timed("export (JSONL + blobs)", lambda: export_trace(trace, root / "export"))
        timed("import (read the export)", lambda: read_exported_trace(root / "export"))
        timed("import (rebuild run.sqlite)", lambda: import_to_store(root / "export", root / "run"))
        timed("report (HTML with figures)", lambda: write_report(trace, root / "report.html"))
        store = Store.open(root / "run")
        try:
            line_diff.cache_clear()
            deepest = static.best_id or "1"
            timed(f"lineage_deletions x100 (depth {static.lineage_depth}, store)",
                  lambda: [lineage_deletions(StoreLineage(store), deepest) for _ in range(100)])
            _time_deletion_helpers(trace, store)
        finally:
            store.close()


def _time_deletion_helpers(trace: Trace, store: Store) -> None:
    """What the deletion-aware engine does per proposal, over the last 1,000 edits: the parent's
    lineage deletions and the child's re-introduction share (the library helpers, then the
    deletion filter that the proposer calls), and the prompt note the request builder adds."""
    recent = [c for c in trace.candidates[-1000:] if c.parent_id is not None]
    line_diff.cache_clear()
    shares: list[float] = []

    def per_edit() -> None:
        for child in recent:
            parent = trace.candidate(child.parent_id or "")
            deleted = deleted_lines_in_lineage(store, parent.id)
            shares.append(reintroduction_share(parent.source or "", child.source or "", deleted))

    timed(f"deleted lines + share x{len(recent)} (store)", per_edit)
    print(f"{'':<40} mean re-introduction share {sum(shares) / len(shares):.1%}")
    settings = TraceFeedbackConfig()
    deletion_filter = DeletionFilter(settings, store, "python")
    line_diff.cache_clear()
    verdicts = timed(f"deletion filter check x{len(recent)} (engine)", lambda: [
        deletion_filter.check(int(c.parent_id or 0), trace.candidate(c.parent_id or "").source
                              or "", c.source or "") for c in recent])
    print(f"{'':<40} {sum(v.action != 'keep' for v in verdicts)} of {len(verdicts)} children "
          f"above the {settings.reintroduction_threshold:.0%} threshold")
    line_diff.cache_clear()
    texts = timed(f"deletion_history_text x{len(recent)} (store)",
                  lambda: [deletion_history_text(store, c.id) for c in recent])
    print(f"{'':<40} prompt sections of {min(map(len, texts))}-{max(map(len, texts))} chars")
    notes = timed(f"deletion history note x{len(recent)} (engine)",
                  lambda: [deletion_history_note(store, settings, int(c.id)) for c in recent])
    print(f"{'':<40} {sum(bool(n) for n, _ in notes)} of {len(notes)} prompts get a note")


if __name__ == "__main__":
    main()
