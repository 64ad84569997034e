"""An LLM's rating of a correct program's code quality, blended into its score
(``evaluation.llm_feedback_weight``: OpenEvolve's ``evaluator.use_llm_feedback`` with its
``llm_feedback_weight``).

The run's evaluation queue runs its children through :class:`QualityRatedExecutor`: after the
task's evaluator has scored a correct program, the model ``evaluation.llm_feedback_model``
rates the program's readability, maintainability and efficiency as one number from 0 to 1 (one
recorded call, purpose ``llm_feedback``), and the score becomes
``(1 - w) * evaluator score + w * rating`` (for a minimised score, ``w * (1 - rating)``). Both
parts stay in the public metrics (``evaluator_score``, ``llm_quality``), so prompts and
``status`` show what the evaluator said. A call that gives no rating (budget, failure, a reply
without a number) leaves the evaluator's score as it is, with a note in the feedback.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cambrian.core.objective import Objective
from cambrian.evaluate.executor import EvaluationExecutor, EvaluationJob, EvaluationOutcome
from cambrian.llm.base import GenerationParams, LLMRequest, Message
from cambrian.llm.gateway import LLMGateway

PURPOSE = "llm_feedback"
MAX_SOURCE_CHARS = 12_000
_RATING = re.compile(r"QUALITY:\s*([01](?:\.\d+)?|\.\d+)")
# For a model that honours a grammar: exactly the line asked for.
GRAMMAR = 'root ::= "QUALITY: " ("0." [0-9] [0-9]? | "1.0")'


def rating_prompt(source: str, language: str) -> str:
    shown = source if len(source) <= MAX_SOURCE_CHARS else (
        source[:MAX_SOURCE_CHARS // 2] + "\n...\n" + source[-MAX_SOURCE_CHARS // 2:])
    return (f"Rate the code quality of this {language} program: readability, maintainability "
            "and efficiency, together, from 0.0 (poor) to 1.0 (excellent). Do not judge "
            f"whether it is correct; that is measured elsewhere.\n\n```{language}\n"
            f"{shown.rstrip()}\n```\n\nReply with one line and nothing else:\n"
            "QUALITY: <a number from 0.0 to 1.0>")


def parse_rating(text: str) -> float | None:
    found = _RATING.search(text or "")
    if found is None:
        return None
    value = float(found.group(1))
    return value if 0.0 <= value <= 1.0 else None


class QualityRatedExecutor:
    """The run's executor, a correct child's score blended with an LLM's quality rating."""

    def __init__(self, inner: EvaluationExecutor, gateway: LLMGateway, label: str,
                 weight: float, language: str, objective: Objective) -> None:
        self.inner = inner
        self.evaluator = inner.evaluator
        self.gateway = gateway
        self.label = label
        self.weight = weight
        self.language = language
        self.objective = objective

    async def prepare(self) -> None:
        await self.inner.prepare()

    async def close(self) -> None:
        await self.inner.close()

    async def run(self, job: EvaluationJob) -> EvaluationOutcome:
        outcome = await self.inner.run(job)
        result = outcome.result
        if not result.correct or result.combined_score is None:
            return outcome
        request = LLMRequest((Message("user", rating_prompt(job.source, self.language)),),
                             GenerationParams(temperature=0.0, max_tokens=16, grammar=GRAMMAR))
        call = await self.gateway.call(PURPOSE, self.label, request)
        rating = parse_rating(call.text or "")
        if rating is None:
            why = call.skipped or call.error or "the reply held no QUALITY: line"
            note = f"(no code-quality rating: {why}; the evaluator's score stands)"
            feedback = f"{result.text_feedback}\n{note}".strip()
            return replace(outcome, result=replace(result, text_feedback=feedback))
        score = result.combined_score
        quality = rating if self.objective.maximize else 1.0 - rating
        blended = (1.0 - self.weight) * score + self.weight * quality
        public = {**result.public, "evaluator_score": score, "llm_quality": rating}
        return replace(outcome, result=replace(result, combined_score=blended, public=public))


__all__ = ["GRAMMAR", "PURPOSE", "QualityRatedExecutor", "parse_rating", "rating_prompt"]
