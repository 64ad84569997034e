"""Budgets: caps on money, tokens, LLM calls and wall time, and spending pacing.

A run stops cleanly (no new proposals; evaluations in flight finish) when committed spending
reaches a cap: what was spent plus what the proposals in flight will likely cost, so parallel
calls do not overshoot. Pacing follows seed 002 §10.9: when the share of the money (or token)
budget left falls below ``pacing_factor`` times the share of the run left, proposals are
restricted to the cheaper arms until spending is back on schedule.
"""

from __future__ import annotations

import statistics
import time

from cambrian.config import BudgetConfig
from cambrian.store.rows import Spend
from cambrian.store.store import Store


class BudgetManager:
    def __init__(self, config: BudgetConfig, store: Store, generations: int) -> None:
        self.config = config
        self.store = store
        self.generations = generations
        self._session_start = time.monotonic()
        # Active seconds of earlier sessions (a resumed run keeps its clock; the time the run
        # was down does not count).
        self._earlier_sessions_s = store.events.active_seconds()

    def elapsed_s(self) -> float:
        return self._earlier_sessions_s + time.monotonic() - self._session_start

    def spend(self) -> Spend:
        return self.store.contexts.spend()

    def _per_call(self, spend: Spend) -> tuple[float, float]:
        return (spend.cost_usd / spend.calls, spend.tokens / spend.calls) if spend.calls else (0.0, 0.0)

    def stop_reason(self, pending_calls: int = 0) -> str | None:
        """Why spending must stop, counting ``pending_calls`` calls in flight or about to start."""
        cfg = self.config
        in_flight = pending_calls
        spend = self.spend()
        cost_per_call, tokens_per_call = self._per_call(spend)
        if _over(spend.cost_usd, in_flight * cost_per_call, cfg.max_cost_usd):
            return f"cost budget reached (${spend.cost_usd:.4f} spent of ${cfg.max_cost_usd:g})"
        if _over(spend.tokens, in_flight * tokens_per_call, cfg.max_tokens):
            return f"token budget reached ({spend.tokens} of {cfg.max_tokens} tokens)"
        if _over(spend.calls, in_flight, cfg.max_llm_calls):
            return f"LLM call budget reached ({spend.calls} of {cfg.max_llm_calls} calls)"
        if cfg.max_wall_time_s is not None and self.elapsed_s() >= cfg.max_wall_time_s:
            return f"wall-time budget reached ({self.elapsed_s():.0f} s of {cfg.max_wall_time_s:g} s)"
        return None

    def progress(self, evaluated: int) -> float:
        """Share of the run done: the furthest of evaluations, LLM calls and wall time (money
        and tokens are paced against it, so they are not part of it)."""
        shares = [evaluated / self.generations if self.generations else 1.0]
        if self.config.max_llm_calls:
            shares.append(self.spend().calls / self.config.max_llm_calls)
        if self.config.max_wall_time_s:
            shares.append(self.elapsed_s() / self.config.max_wall_time_s)
        return min(1.0, max(shares))

    def position(self, evaluated: int) -> float:
        """The share of the binding budget spent: ``progress``, or money or tokens when they
        run out faster (search phases split the budget by it: seed 004 §10.9)."""
        spend = self.spend()
        shares = [self.progress(evaluated)]
        for spent, cap in ((spend.cost_usd, self.config.max_cost_usd),
                           (spend.tokens, self.config.max_tokens)):
            if cap:
                shares.append(spent / cap)
        return min(1.0, max(shares))

    def behind_schedule(self, evaluated: int) -> bool:
        """True when money or tokens are being spent faster than the run progresses."""
        spend = self.spend()
        time_left = 1.0 - self.progress(evaluated)
        for spent, cap in ((spend.cost_usd, self.config.max_cost_usd), (spend.tokens, self.config.max_tokens)):
            if cap:
                budget_left = 1.0 - spent / cap
                if budget_left < time_left * self.config.pacing_factor:
                    return True
        return False

    def cheaper_arms(self, arm_models: dict[str, str]) -> set[str] | None:
        """Arms whose model costs at most the median per call, or None when all cost the same.

        ``arm_models`` maps arm key -> model label; per-call cost comes from the ledger, and a
        model not yet used counts as the cheapest (it may be free, e.g. a local model).
        """
        ledger = {r.model: r.cost_usd / r.calls for r in self.store.contexts.ledger() if r.calls}
        costs = {arm: ledger.get(model, 0.0) for arm, model in arm_models.items()}
        if len(set(costs.values())) <= 1:
            return None
        median = statistics.median(costs.values())
        return {arm for arm, cost in costs.items() if cost <= median}


def _over(spent: float, expected: float, cap: float | None) -> bool:
    """Spent already reached the cap, or the calls in flight are expected to go past it."""
    return cap is not None and (spent >= cap or spent + expected > cap)
