"""Aggregate per-case results into one score, and summarise them for the next prompt.

Aggregation (seed 002 §10.7 "Fitness Aggregation"): ``mean`` or ``mean_minus_std``, i.e.
mean - λ·std for a maximised score and mean + λ·std for a minimised one -- inconsistency is
penalised in both directions. std is the population standard deviation, as in the seed.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from cambrian.core.objective import Objective
from cambrian.evaluate.judge.verdicts import CaseResult, Verdict

WORST_CASES_SHOWN = 3
MESSAGE_CHARS_SHOWN = 240


def aggregate(scores: Sequence[float], method: str, std_penalty: float,
              objective: Objective) -> float:
    if not scores:
        raise ValueError("cannot aggregate an empty list of scores")
    mean = statistics.fmean(scores)
    if method == "mean":
        return mean
    if method == "mean_minus_std":
        spread = statistics.pstdev(scores) if len(scores) > 1 else 0.0
        # The penalty lowers the fitness: the score moves towards worse in either direction.
        return objective.score(objective.fitness(mean) - std_penalty * spread)
    raise ValueError(f"unknown aggregation {method!r} (mean, mean_minus_std)")


def verdict_counts(results: Sequence[CaseResult]) -> dict[str, int]:
    counts = Counter(r.verdict.value for r in results)
    return {v.value: counts[v.value] for v in Verdict if counts[v.value]}


def score_statistics(results: Sequence[CaseResult]) -> dict[str, float]:
    scores = [r.score for r in results if r.accepted and r.score is not None]
    if not scores:
        return {}
    return {
        "score_mean": statistics.fmean(scores),
        "score_min": min(scores),
        "score_max": max(scores),
        "score_std": statistics.pstdev(scores) if len(scores) > 1 else 0.0,
    }


def worst_cases(results: Sequence[CaseResult], objective: Objective) -> list[CaseResult]:
    """Failed cases first (in case order), then the lowest-scoring accepted ones."""
    failed = [r for r in results if not r.accepted]
    accepted = sorted(
        (r for r in results if r.accepted),
        key=lambda r: objective.fitness(r.score or 0.0),
    )
    return (failed + accepted)[:WORST_CASES_SHOWN]


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS_SHOWN else text[: MESSAGE_CHARS_SHOWN - 3] + "..."


def _case_line(result: CaseResult) -> str:
    if result.accepted:
        return f"  {result.case_id}: AC, score {result.score:.6g} ({result.time_s:.2f} s)"
    return f"  {result.case_id}: {result.verdict.value} ({result.verdict.meaning}): " + _shorten(
        result.message
    )


def feedback_text(
    results: Sequence[CaseResult],
    *,
    set_label: str,
    planned: int,
    skipped: int,
    objective: Objective,
    combined_score: float | None,
    aggregation: str,
) -> str:
    """A compact, prompt-sized summary: verdict counts, score range, the worst cases."""
    counts = ", ".join(f"{name} {count}" for name, count in verdict_counts(results).items())
    lines = [f"Judged on {len(results)} of {planned} {set_label} cases: {counts or 'none run'}."]
    if skipped:
        lines.append(f"Stopped after the first failing case; {skipped} cases were not run.")
    stats = score_statistics(results)
    if stats:
        slowest = max(r.time_s for r in results)
        lines.append(
            f"Accepted-case scores: mean {stats['score_mean']:.6g}, min {stats['score_min']:.6g}, "
            f"max {stats['score_max']:.6g}, std {stats['score_std']:.4g}; slowest case "
            f"{slowest:.2f} s."
        )
    if combined_score is not None:
        lines.append(f"Aggregate ({aggregation}): {combined_score:.6g}.")
    worst = worst_cases(results, objective)
    if worst:
        lines.append("Worst cases:")
        lines.extend(_case_line(r) for r in worst)
    return "\n".join(lines)


def failure_error(results: Sequence[CaseResult], set_label: str) -> str:
    failed = [r for r in results if not r.accepted]
    if not failed:
        return ""
    first = failed[0]
    return (
        f"{len(failed)} {set_label} case(s) failed; first: {first.case_id} "
        f"{first.verdict.value} ({first.verdict.meaning}): {_shorten(first.message)}"
    )


def cases_payload(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in results]
