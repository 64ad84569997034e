"""Every ``ast.parse`` of the process goes through one lock once Cambrian's parser is imported:
CPython 3.11 shares the AST constructor's recursion counter between threads, and its own
``traceback`` parses the failing line to place carets, so a thread formatting a traceback
while another parses could fail the parse with "AST constructor recursion depth mismatch"."""

from __future__ import annotations

import ast
import sys
import threading
import traceback

import pytest

from cambrian.core import python_ast


def _error() -> BaseException:
    table = {"a": [1, 2]}
    try:
        table["a"][5] + table["a"][0]  # noqa: B018 (a subscript and a binary operation)
    except IndexError as error:
        return error
    raise AssertionError("no error")


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="traceback no longer parses the line")
def test_a_traceback_formatted_in_another_thread_waits_for_a_parse():
    error = _error()
    formatted: list[str] = []
    done = threading.Event()

    def format_it() -> None:
        formatted.extend(traceback.format_exception(error))
        done.set()

    with python_ast._LOCK:  # a parse in progress
        worker = threading.Thread(target=format_it)
        worker.start()
        assert not done.wait(0.5), "the traceback's ast.parse did not wait for the lock"
    assert done.wait(30)
    worker.join()
    assert "IndexError" in "".join(formatted)


def test_the_locked_parse_parses_as_ast_parse_does():
    tree = ast.parse("x = [1][0]\n", filename="<t>", mode="exec")
    assert isinstance(tree, ast.Module)
    assert ast.dump(python_ast.parse_python("x = [1][0]\n")) == ast.dump(tree)
    with pytest.raises(SyntaxError):
        ast.parse("def (")
    with python_ast._LOCK:  # re-entrant: a parse inside a parse does not wait for itself
        assert isinstance(ast.parse("y = 2"), ast.Module)
