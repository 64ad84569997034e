"""What an evaluation's environment lacked, when its output says so: a command not found, a
module not installed, a file it may not open, a shared library missing. No candidate can fix
such a failure; a run whose evaluations all fail this way says so early (``search/
environment_watch.py``) instead of spending its LLM calls on children that cannot pass.

The name is short and the same for every evaluation that failed the same way, so that failures
can be compared ("command not found: cargo").
"""

from __future__ import annotations

import re

from cambrian.core.evaluation import EvaluationResult

# (pattern, what it names); the first group is the missing thing.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"No module named '([^']+)'"), "no module named '{}'"),
    (re.compile(r"([\w.+/-]+): command not found"), "command not found: {}"),
    (re.compile(r"\bsh: \d+: ([\w.+/-]+): not found"), "command not found: {}"),
    # subprocess's FileNotFoundError for a bare command name (a path is a data file's).
    (re.compile(r"No such file or directory: '([\w.+-]+)'"), "command not found: {}"),
    (re.compile(r"Permission denied: '([^']+)'"), "permission denied: {}"),
    (re.compile(r"([^\s:'\"]+): Permission denied"), "permission denied: {}"),
    (re.compile(r"error while loading shared libraries: ([^:\s]+)"), "missing library: {}"),
)
SEARCHED_CHARS = 20_000  # of each text, from its end (where a traceback ends)


def environment_error(result: EvaluationResult) -> str | None:
    """What the environment lacked, as the evaluation's texts tell (its error, then stderr,
    stdout and the evaluator's feedback: an evaluator that catches the error may only print it
    or put it in its feedback); None when they tell nothing of the kind."""
    for text in (result.error, result.stderr, result.stdout, result.text_feedback):
        tail = (text or "")[-SEARCHED_CHARS:]
        for pattern, name in _PATTERNS:
            match = pattern.search(tail)
            if match:
                return name.format(match.group(1))
    return None


__all__ = ["environment_error"]
