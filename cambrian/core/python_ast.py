"""``ast.parse`` behind one lock. CPython 3.11 keeps the AST constructor's recursion counter in
state that every thread shares, so two threads parsing at once can fail with "SystemError: AST
constructor recursion depth mismatch" (python/cpython#106905). Cambrian parses Python from the
loop's thread and from worker threads (``asyncio.to_thread``), so every parse goes through
here.

Parses Cambrian does not make race too: Python 3.11's ``traceback`` calls ``ast.parse`` to
place the carets under a failing expression, so a thread that formats a traceback (a log line,
a rich console) while another parses failed a run's proposal (seen in the Ray tutorial's
test). Importing this module therefore puts the process's ``ast.parse`` itself behind the
lock (re-entrant: a parse that formats a traceback inside does not wait for itself).
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.RLock()
_UNLOCKED_PARSE = getattr(ast.parse, "__wrapped__", ast.parse)


def _locked_parse(*args: Any, **kwargs: Any) -> Any:
    with _LOCK:
        return _UNLOCKED_PARSE(*args, **kwargs)


_locked_parse.__wrapped__ = _UNLOCKED_PARSE  # type: ignore[attr-defined]
_locked_parse.__doc__ = _UNLOCKED_PARSE.__doc__
ast.parse = _locked_parse


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time (raises SyntaxError as it does)."""
    with _LOCK:
        return _UNLOCKED_PARSE(source, filename=filename)
