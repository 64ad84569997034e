"""Whether a replay reached what the recorded run reached, and what differs when it did not.

"The same" is checked where the loop's decisions show: every candidate's program (byte for
byte), parent, inspirations, operator, generation, island, model and notes (what its proposal
drew: intent, strategy, arm...), then its evaluation (status, score, public metrics), the order
evaluations were committed in, and for a whole run the search state saved at its end (random
generator, selector, archive snapshot, bandit, hooks), its LLM calls and its best program.

A candidate whose program and parents are the same but whose evaluation is not was scored
differently by the same evaluator: the evaluator is not deterministic (``noisy``). The first
candidate whose program or parents differ is where the replay's decisions diverged.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from cambrian.core.objective import Objective
from cambrian.core.status import EVALUATED
from cambrian.store.rows import CandidateRow
from cambrian.store.store import Store

# The search state keys a whole replay must end with (search/archive.py ``Archive.state``).
STATE_KEYS = ("rng", "selector", "archive_snapshot", "ensemble", "hooks")
PROPOSAL_FIELDS = ("source", "parent", "inspirations", "operator", "generation", "island",
                   "model", "notes")
EVALUATION_FIELDS = ("status", "score", "metrics")


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass(frozen=True)
class Difference:
    """One thing the replay did not reproduce. ``candidate_id`` None: a run-wide one."""

    what: str
    original: str
    replay: str
    candidate_id: int | None = None

    def line(self) -> str:
        who = f"candidate {self.candidate_id}: " if self.candidate_id is not None else ""
        return f"{who}{self.what}: original {self.original}, replay {self.replay}"


@dataclass(frozen=True)
class Comparison:
    compared: int  # candidates compared
    differences: tuple[Difference, ...] = ()
    # Same program and parents, another evaluation: the evaluator is not deterministic.
    noisy: tuple[int, ...] = ()
    # The first candidate whose program or parents differ: where the decisions diverged.
    first_divergence: int | None = None
    best: tuple[tuple[int, float | None] | None, tuple[int, float | None] | None] = (None, None)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def identical(self) -> bool:
        return not self.differences


def _source_difference(original: str, replay: str) -> tuple[str, str]:
    old, new = original.splitlines(), replay.splitlines()
    for number, (was, now) in enumerate(zip(old, new), start=1):
        if was != now:
            return f"line {number} {_short(was, 80)!r}", f"{_short(now, 80)!r}"
    return f"{len(old)} lines", f"{len(new)} lines"


def _proposal(store: Store, row: CandidateRow) -> dict[str, Any]:
    inspirations = sorted(parent for parent, _child, kind, _op in store.lineage.edges(row.id)
                          if kind != "parent")
    return {"source": row.source or "", "parent": row.parent_id, "inspirations": inspirations,
            "operator": row.operator, "generation": row.generation, "island": row.island,
            "model": row.model, "notes": row.notes}


def _evaluation(store: Store, row: CandidateRow) -> dict[str, Any]:
    result = store.evaluations.latest(row.id)
    return {"status": str(row.status), "score": row.score,
            "metrics": result.public if result is not None else None}


def _candidate_differences(original: Store, replay: Store, candidate_id: int,
                           evaluated: bool) -> tuple[list[Difference], bool]:
    """The differences of one candidate, and whether its proposal (program, parents) differs."""
    old, new = original.candidates.find(candidate_id), replay.candidates.find(candidate_id)
    if old is None or new is None:
        missing = "absent" if old is None else "present"
        return [Difference("candidate", missing, "present" if new is not None else "absent",
                           candidate_id)], True
    found: list[Difference] = []
    proposal_old, proposal_new = _proposal(original, old), _proposal(replay, new)
    for key in PROPOSAL_FIELDS:
        if proposal_old[key] == proposal_new[key]:
            continue
        if key == "source":
            was, now = _source_difference(proposal_old[key], proposal_new[key])
        elif key == "notes":
            keys = sorted(k for k in {*old.notes, *new.notes} if old.notes.get(k) != new.notes.get(k))
            was = _short({k: old.notes.get(k) for k in keys})
            now = _short({k: new.notes.get(k) for k in keys})
        else:
            was, now = _short(proposal_old[key]), _short(proposal_new[key])
        found.append(Difference(key, was, now, candidate_id))
    diverged = any(d.what in ("source", "parent", "inspirations") for d in found)
    if evaluated:
        outcome_old, outcome_new = _evaluation(original, old), _evaluation(replay, new)
        found += [Difference(key, _short(outcome_old[key]), _short(outcome_new[key]),
                             candidate_id)
                  for key in EVALUATION_FIELDS if outcome_old[key] != outcome_new[key]]
    return found, diverged


def _best(store: Store, ids: Collection[int], objective: Objective) -> tuple[int, float | None] | None:
    best: tuple[int, float | None] | None = None
    for candidate_id in sorted(ids):
        row = store.candidates.find(candidate_id)
        if row is None or row.status not in EVALUATED or row.score is None:
            continue
        if str(row.status) != "correct":
            continue
        if best is None or objective.better(row.score, best[1]):
            best = (row.id, row.score)
    return best


def compare_runs(original: Store, replay: Store, objective: Objective, *,
                 candidates: Iterable[int], evaluated: Collection[int],
                 whole: bool) -> Comparison:
    """Compare ``candidates`` of the two runs (their evaluations for those in ``evaluated``);
    ``whole``: both runs ran to their end, so their final search state, calls and best are
    compared too."""
    ids = sorted(set(candidates))
    differences: list[Difference] = []
    noisy: list[int] = []
    first: int | None = None
    for candidate_id in ids:
        found, diverged = _candidate_differences(original, replay, candidate_id,
                                                 candidate_id in evaluated)
        differences += found
        if diverged and first is None:
            first = candidate_id
        if found and not diverged and any(d.what in EVALUATION_FIELDS for d in found):
            noisy.append(candidate_id)
    evaluated_ids = set(evaluated)
    order_old = [i for i in original.evaluations.committed_order() if i in evaluated_ids]
    order_new = [i for i in replay.evaluations.committed_order() if i in evaluated_ids]
    if order_old != order_new:
        differences.append(Difference("commit order", _short(order_old), _short(order_new)))
    if whole:
        for key in STATE_KEYS:
            was, now = original.state.get(key), replay.state.get(key)
            if _plain(was) != _plain(now):
                differences.append(Difference(f"search state '{key}'", _short(was), _short(now)))
        calls_old, calls_new = original.contexts.count(), replay.contexts.count()
        if calls_old != calls_new:
            differences.append(Difference("LLM calls", str(calls_old), str(calls_new)))
    best = (_best(original, evaluated_ids, objective), _best(replay, evaluated_ids, objective))
    if best[0] != best[1]:
        differences.append(Difference("best", _short(best[0]), _short(best[1])))
    return Comparison(len(ids), tuple(differences), tuple(noisy), first, best)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))
