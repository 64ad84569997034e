"""What a proposal that writes an improvement step's score again is shown of the last score the
check against the evaluator refused (``search/step_score_check.py``): the reason, the
evaluator's fitness and that score's value on the solution as built and on the perturbed copies,
and the refused function. Without it each score proposal starts from nothing, and a small model
repeats the same mistake (a tour's "length" taken as ``len(tour)``, a stub's ``0.0 *`` kept in
front of the formula): six refused scores in a row in a 40-call run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cambrian.core.events import StepScoreChecked
from cambrian.lang.language import Language
from cambrian.mutate.focus import NOTE_KEY as FOCUS_NOTE
from cambrian.mutate.step.score_check import changed_part, variant_name
from cambrian.mutate.step.wiring import definition_text, scaffold
from cambrian.store.store import Store

SHOWN_VARIANTS = 6  # the solution as built and the first perturbed copies
NOTE_TAG = "refused_score_shown"  # the child's note: the candidate whose refused score it saw


def refused_score_note(checks: Sequence[StepScoreChecked], store: Store, score: str,
                       language: Language, entry: str | None = None) -> tuple[str, int] | None:
    """(note, candidate id) for the newest of the run's ``checks`` (oldest first) that refused
    a child that wrote ``score``; None when the newest check of such a child accepted its
    score, or there is none. ``entry``: the run's step entry (``wiring.scaffold``)."""
    for check in reversed(checks):
        row = (store.candidates.find(check.candidate_id)
               if check.candidate_id is not None else None)
        if row is None or row.notes.get(FOCUS_NOTE) != score:
            continue
        if check.accepted or check.evaluator_ignores_solution:  # nothing to write better
            return None
        text = definition_text(row.source or "", score, language)
        if text is None:
            return None
        wired = scaffold(row.source or "", language, entry=entry)
        # Which part each copy changed, where the check says the parts (it changes them in turn).
        names = (wired.solution if wired is not None and check.solution_parts
                 and len(wired.solution) == len(check.solution_parts) else ())
        return _note(score, check, text, language, names), row.id
    return None


def _note(score: str, check: StepScoreChecked, text: str, language: Language,
          names: tuple[str, ...]) -> str:
    lines = [f"Your previous `{score}` was refused. The framework ran the solution the program "
             "builds and slightly perturbed copies of it through the task's evaluator, and "
             f"{check.reason}.",
             "The evaluator's fitness (higher is better) and that score's value:"]
    for index, (fitness, value) in enumerate(zip(check.evaluator, check.model)):
        if index >= SHOWN_VARIANTS:
            break
        name = variant_name(index)
        if index and len(names) > 1:
            name += f" (`{names[changed_part(index, len(names))]}` changed)"
        lines.append(f"- {name}: evaluator {_number(fitness, 'invalid')}, "
                     f"score {_number(value, 'no number')}")
    lines += [f"The refused `{score}`:", f"```{language.fence_tag}", text.rstrip(), "```",
              "Write one whose value rises and falls with the evaluator's: compute from the "
              "solution the number the problem statement asks for."]
    return "\n".join(lines)


def _number(value: float | None, missing: str) -> str:
    return missing if value is None or math.isnan(value) else f"{value:.6g}"
