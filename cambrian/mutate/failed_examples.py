"""Reflective mutation (GEPA, Agrawal et al. 2025): the examples the parent got wrong, shown to
the model with what was expected and what it answered, and an instruction to reflect on why they
failed before changing anything.

The examples are the ``cases`` the parent's evaluator reported (``evaluate/case_feedback.py``).
The prompt (``prompts.py``) shows the failed ones in a section of their own, fewer as the
context window gets tight, and adds the instruction to its task only when the section is shown.
Which failures are shown is deterministic: taken in turn from each expected answer, so that a
prompt shows the kinds of failure there are rather than many of one kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cambrian.evaluate.case_feedback import is_failed

MAX_SHOWN_CASES = 6
SHOWN_FIELD_CHARS = 240
FIELDS = (("input", "input"), ("expected", "expected"), ("output", "answered"),
          ("feedback", "feedback"))

Case = Mapping[str, Any]


def failed_cases(cases: Sequence[Case]) -> list[Case]:
    return [case for case in cases if is_failed(case)]


def chosen_failures(cases: Sequence[Case], limit: int) -> list[Case]:
    """At most ``limit`` failed cases, one per expected answer in turn (in report order)."""
    groups: dict[str, list[Case]] = {}
    for case in failed_cases(cases):
        groups.setdefault(str(case.get("expected", "")), []).append(case)
    chosen: list[Case] = []
    depth = 0
    while len(chosen) < limit and any(len(group) > depth for group in groups.values()):
        chosen += [group[depth] for group in groups.values() if len(group) > depth]
        depth += 1
    return chosen[:limit]


def _shown(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= SHOWN_FIELD_CHARS else text[: SHOWN_FIELD_CHARS - 1] + "…"


def cases_section(cases: Sequence[Case], limit: int = MAX_SHOWN_CASES) -> str:
    """The "Examples it got wrong" section ("" when none failed or ``limit`` is 0)."""
    failed = failed_cases(cases)
    if not failed or limit <= 0:
        return ""
    lines = [f"## Examples it got wrong ({len(failed)} of {len(cases)})"]
    chosen = chosen_failures(cases, limit)
    for number, case in enumerate(chosen, start=1):
        parts = [f"{label}: {_shown(case[key])}" for key, label in FIELDS if key in case]
        lines.append(f"{number}. " + "\n   ".join(parts or ["(no details reported)"]))
    if len(failed) > len(chosen):
        lines.append(f"({len(failed) - len(chosen)} more not shown)")
    return "\n".join(lines)


def reflection_instruction(noun: str) -> str:
    """What the task asks when failed examples are shown (``noun``: program or text)."""
    return (f"Before you change anything, look at the examples it got wrong above: what do they "
            f"have in common, and why did the current {noun} fail on them? Make the change "
            "that gets them right without losing the examples it already gets right. Your first "
            "line names that cause and your change, in at most 15 words.")
