"""A run whose evaluations all fail the same way because of the evaluation environment (a
command not found, a module not installed, permission denied) says so at once and stops early,
instead of spending its LLM calls on children that cannot pass: no program a model writes
installs a compiler.

From the run's first evaluation on, while every evaluation failed (or scored 0, as an evaluator
that catches the error reports it) with the same environment error
(``evaluate/environment_errors.py``): the first one is a warning, so is the WARN_AFTER-th, and
the STOP_AFTER-th stops the run (exit 4, "nothing could be evaluated"); its pending children
stay pending, so a `cambrian resume` after the fix evaluates them. Any evaluation that does not
fail this way ends the watch for the run. The count is a function of the store: a resumed run
picks it up where it was.
"""

from __future__ import annotations

import logging

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import EnvironmentFailing
from cambrian.core.outcomes import RunOutcome
from cambrian.evaluate.environment_errors import environment_error
from cambrian.search.context import RunAborted, RunContext

log = logging.getLogger(__name__)

WARN_AFTER = 3
STOP_AFTER = 5
ADVICE = ("Evaluations run in the sandbox as an unprivileged user who can read the folders of "
          "PATH: install what is missing where that user can run it (or set evaluation.env or "
          "evaluation.python)")


def environment_failure(result: EvaluationResult) -> str | None:
    """The environment error an evaluation failed with (a score of 0 counts as a failure: an
    evaluator catching the error scores it so); None when it did not fail that way."""
    if result.correct and result.combined_score != 0:
        return None
    return environment_error(result)


class EnvironmentWatch:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.failure: str | None = None
        self.count = 0
        self.watching = True
        self._restore()

    def _restore(self) -> None:
        store = self.ctx.store
        for candidate_id in store.evaluations.iter_committed_order():
            result = store.evaluations.latest(candidate_id)
            if result is None or not self._counts(result):
                return

    def _counts(self, result: EvaluationResult) -> bool:
        """Count ``result``; False (and the watch ends) when it did not fail the same way."""
        failure = environment_failure(result)
        if failure is None or (self.failure is not None and failure != self.failure):
            self.watching = False
            return False
        self.failure = failure
        self.count += 1
        return True

    def observe(self, result: EvaluationResult) -> None:
        """After each committed evaluation; raises RunAborted on the STOP_AFTER-th failure."""
        if not self.watching or not self._counts(result):
            return
        failure, count = self.failure or "", self.count
        if count >= STOP_AFTER:  # the session's end records the reason
            raise RunAborted(
                f"the first {count} evaluations all failed the same way, because of the "
                f"evaluation environment: {failure}. {ADVICE}, then `cambrian resume` the run "
                "(its pending children are evaluated then)", RunOutcome.NOTHING_EVALUATED)
        if count == 1 or count == WARN_AFTER:
            which = "the run's first evaluation" if count == 1 else f"the first {count} evaluations"
            message = (f"{which} failed (or scored 0) because of the evaluation environment: "
                       f"{failure}. {ADVICE}. The run stops if its first {STOP_AFTER} "
                       "evaluations all fail this way")
            log.debug("%s", message)
            self.ctx.recorder.emit(EnvironmentFailing(failure=failure, evaluations=count,
                                                      message=message))
