"""Whether a novelty judge call is worth its cost (``novelty.judge_when: cost``).

The judge exists to save the evaluation of a near-copy; it is asked only when that evaluation is
expected to cost more than the call. Both are measured in the run: the median duration of its
last evaluations (``main`` rows: a candidate's whole evaluation) against the median latency of
the judge model's last judge calls, or of that model's other calls before the first judge call
(longer replies than the judge's one word: an overestimate, so a near-copy is rather evaluated).
Where the model has a price and the run both a USD and a wall-time cap, the call's median USD
counts too, at the budget's own rate (``max_wall_time_s / max_cost_usd`` seconds a dollar);
without both caps seconds alone decide and the price is only reported. Nothing measured yet
(no evaluation, no call of the model): the judge is asked.

Reading the store is incremental: each estimate reads the rows added since the last one, and
the medians are over the last ``WINDOW`` of each. A resume reads the same rows, so decides as the
run would have. A replay (``cambrian replay``) evaluates again, with times of its own, and its
judge replies are served instantly: it decides each near-copy as the recorded run did instead
(``RecordedJudgeCosts``, read back from the recorded children's notes), and measures only
where the recorded run made no such decision (past ``--from N``).
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from cambrian.config import BudgetConfig
from cambrian.store.store import Store

WINDOW = 101  # the medians are over the last 101 evaluations and calls


@dataclass(frozen=True)
class JudgeCost:
    """One comparison: ``ask`` and the reason, as a child's notes record it (``cost``)."""

    ask: bool
    reason: str
    evaluation_s: float | None
    judge_s: float | None
    judge_usd: float = 0.0


class JudgeCostModel:
    def __init__(self, store: Store, judge_label: str, budget: BudgetConfig | None = None,
                 *, purpose: str = "novelty") -> None:
        self.store = store
        self.judge_label = judge_label
        self.purpose = purpose
        budget = budget or BudgetConfig()
        self.seconds_per_usd = (budget.max_wall_time_s / budget.max_cost_usd
                                if budget.max_wall_time_s and budget.max_cost_usd else None)
        self._evaluations: deque[float] = deque(maxlen=WINDOW)
        self._judge_calls: deque[tuple[float, float]] = deque(maxlen=WINDOW)
        self._model_calls: deque[tuple[float, float]] = deque(maxlen=WINDOW)
        self._last_evaluation = 0
        self._last_call = 0

    def _read(self) -> None:
        for row_id, duration in self.store.evaluations.latest_durations(self._last_evaluation,
                                                                         WINDOW):
            self._evaluations.append(duration)
            self._last_evaluation = row_id
        for row_id, purpose, latency, usd in self.store.contexts.latest_costs(
                self.judge_label, self._last_call, WINDOW):
            (self._judge_calls if purpose == self.purpose else self._model_calls).append(
                (latency, usd))
            self._last_call = row_id

    def compare(self, source: str = "") -> JudgeCost:
        """Whether to ask the judge about the near-copy ``source`` (measured: any source)."""
        self._read()
        calls = self._judge_calls or self._model_calls
        if not self._evaluations or not calls:
            return JudgeCost(True, "no measured cost yet: the judge is asked", None, None)
        evaluation_s = statistics.median(self._evaluations)
        judge_s = statistics.median(latency for latency, _ in calls)
        judge_usd = statistics.median(usd for _, usd in calls)
        of = "judge calls" if self._judge_calls else f"{self.judge_label} calls"
        figures = f"median evaluation {evaluation_s:.3g} s, median of {len(calls)} {of} " \
                  f"{judge_s:.3g} s"
        weighed_s = judge_s
        if judge_usd > 0:
            if self.seconds_per_usd is not None:
                weighed_s += judge_usd * self.seconds_per_usd
                figures += f" + ${judge_usd:.3g} (= {judge_usd * self.seconds_per_usd:.3g} s " \
                           "at the budget's rate)"
            else:
                figures += f" and ${judge_usd:.3g}"
        if evaluation_s > weighed_s:
            return JudgeCost(True, f"cheaper to judge ({figures})", evaluation_s, judge_s,
                             judge_usd)
        return JudgeCost(False, f"cheaper to evaluate ({figures})", evaluation_s, judge_s,
                         judge_usd)


class JudgeCosts(Protocol):
    def compare(self, source: str = "") -> JudgeCost: ...


class RecordedJudgeCosts:
    """A replay's decisions: each near-copy the recorded run compared (its child's notes hold
    ``cost``; ``decided: cost`` when it was evaluated without asking) is decided the same way,
    in the recorded order of children with the same program; any other is left to ``measured``."""

    def __init__(self, recorded: dict[str, list[JudgeCost]], measured: JudgeCosts) -> None:
        self.recorded = {source: deque(costs) for source, costs in recorded.items()}
        self.measured = measured

    @staticmethod
    def read(store: Store) -> dict[str, list[JudgeCost]]:
        """The recorded run's comparisons, by the child's program, in the order they were
        stored."""
        found: dict[str, list[JudgeCost]] = {}
        for row in store.candidates.with_note("cost"):
            if row.source is not None:
                found.setdefault(row.source, []).append(JudgeCost(
                    row.notes.get("decided") != "cost", str(row.notes["cost"]), None, None))
        return found

    def compare(self, source: str = "") -> JudgeCost:
        queue = self.recorded.get(source)
        return queue.popleft() if queue else self.measured.compare(source)
