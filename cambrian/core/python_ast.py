"""``ast.parse`` behind one lock. CPython 3.11 keeps the AST constructor's recursion counter in
state that every thread shares, so two threads parsing at once can fail with "SystemError: AST
constructor recursion depth mismatch" (python/cpython#106905). Cambrian parses Python from the
loop's thread and from worker threads (``asyncio.to_thread``), so every parse goes through
here."""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time (raises SyntaxError as it does)."""
    with _LOCK:
        return ast.parse(source, filename=filename)
