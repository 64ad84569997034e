"""A Python program's normal form (``lang/python_normal.py``): what the novelty filter's exact
test treats as the same program, and what it must never treat so."""

from __future__ import annotations

import pytest

from cambrian.lang.python_normal import normal_form

PROGRAM = '''
import math


def spread(points, scale=2.0):
    """Push the points apart."""
    total = 0.0  # running sum
    for i, p in enumerate(points):
        total += math.sqrt(p) * scale + i
    best = max(points, key=lambda q: q * scale)
    def bonus(step):
        return step + total
    return bonus(best)


VALUE = 3
'''

SAME = {
    "comments, layout and docstring": PROGRAM.replace('    """Push the points apart."""\n', "")
    .replace("  # running sum", "").replace("math.sqrt(p) * scale", "(math.sqrt(p)) * scale"),
    "local names, loop variables, a lambda's parameter and a nested function":
        PROGRAM.replace("total", "acc").replace("i, p", "k, v").replace("sqrt(p)", "sqrt(v)")
        .replace(" + i\n", " + k\n").replace("lambda q: q", "lambda x: x")
        .replace("bonus", "extra"),
    "quotes": PROGRAM.replace('"""Push the points apart."""', "'''Push the points apart.'''"),
}

DIFFERENT = {
    "a constant": PROGRAM.replace("VALUE = 3", "VALUE = 4"),
    "an operator": PROGRAM.replace("step + total", "step - total"),
    "a parameter's name (callers may pass it by keyword)":
        PROGRAM.replace("scale", "factor"),
    "a module-level name (the evaluator imports it)": PROGRAM.replace("VALUE", "VAL"),
    "a function's name": PROGRAM.replace("def spread", "def push"),
    "an attribute": PROGRAM.replace("math.sqrt", "math.cbrt"),
    "swapped local names (a different program)":
        PROGRAM.replace("total += math.sqrt(p) * scale + i",
                        "total += math.sqrt(i) * scale + p"),
}


@pytest.mark.parametrize("name", SAME)
def test_changes_that_do_nothing_keep_the_normal_form(name: str):
    assert SAME[name] != PROGRAM
    assert normal_form(SAME[name]) == normal_form(PROGRAM)


@pytest.mark.parametrize("name", DIFFERENT)
def test_changes_of_what_runs_change_the_normal_form(name: str):
    assert DIFFERENT[name] != PROGRAM
    assert normal_form(DIFFERENT[name]) != normal_form(PROGRAM)


def test_dotted_imports_and_code_that_does_not_parse():
    inside = "def f():\n    import os.path\n    return os.path.sep\n"
    aliased = "def f():\n    import os.path as os\n    return os.path.sep\n"
    assert normal_form(inside) != normal_form(aliased)  # the first binds os, the second os.path
    assert normal_form("def f(:\n") is None
