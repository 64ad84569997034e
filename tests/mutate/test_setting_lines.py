"""Function replies may change a constant defined outside the functions by giving its line."""

from __future__ import annotations

import pytest

from cambrian.lang.languages import as_language
from cambrian.mutate.function_patch import apply_function_reply
from cambrian.mutate.grammars import format_instructions
from cambrian.mutate.patch_types import PatchError
from cambrian.mutate.setting_lines import setting_lines

CPP = as_language("cpp")
PYTHON = as_language("python")

CPP_PROGRAM = """#include <cmath>
const int FIXED = 3;
// EVOLVE-BLOCK-START
const int DR[4] = {-1, 1, 0, 0};
const double DISTANCE_POWER = 1.0;  // how distance discounts value
#define ROUNDS 4

double priority(int value, int steps) {
    double scale = 2.0;
    return value / std::pow((double)steps, DISTANCE_POWER) * scale;
}
// EVOLVE-BLOCK-END
int main() { return (int)priority(FIXED, ROUNDS); }
"""

PY_PROGRAM = """import math
# EVOLVE-BLOCK-START
RADIUS_SCALE = 0.9
LIMIT: int = 5
pairs = [
    1,
]
WEIGHT = 1.0
WEIGHT = 2.0


def radii(n):
    step = 0.5
    return [RADIUS_SCALE * step] * n
# EVOLVE-BLOCK-END
OUTSIDE = 7
"""


def test_setting_lines_are_one_line_assignments_outside_functions_inside_the_block():
    assert setting_lines(CPP_PROGRAM, CPP) == {"DISTANCE_POWER": 4, "ROUNDS": 5}
    # An initialiser list, a local variable, a line outside the block, and a name assigned
    # twice (ambiguous) are not settings.
    assert setting_lines(PY_PROGRAM, PYTHON) == {"RADIUS_SCALE": 2, "LIMIT": 3}


def test_a_reply_with_only_a_constant_line_changes_that_line_in_place():
    reply = "Weigh distance less.\n```cpp\nconst double DISTANCE_POWER = 0.75;\n```\n"
    source, changed, notes = apply_function_reply(CPP_PROGRAM, reply, CPP)
    assert changed == 1
    assert source == CPP_PROGRAM.replace(
        "const double DISTANCE_POWER = 1.0;  // how distance discounts value",
        "const double DISTANCE_POWER = 0.75;")
    assert notes == ["changed the setting line(s) of `DISTANCE_POWER`"]


def test_a_function_and_a_constant_line_in_one_reply_both_apply():
    reply = ("More rounds, no scale.\n```cpp\n#define ROUNDS 6\n"
             "double priority(int value, int steps) {\n"
             "    return value / std::pow((double)steps, DISTANCE_POWER);\n}\n```\n")
    source, changed, _ = apply_function_reply(CPP_PROGRAM, reply, CPP)
    assert changed == 2 and "#define ROUNDS 6\n" in source and "scale" not in source
    assert "int main() { return (int)priority(FIXED, ROUNDS); }" in source


def test_python_constant_keeps_its_place_and_other_stray_lines_are_ignored():
    reply = "Bigger circles.\n```python\nRADIUS_SCALE = 0.97\nOUTSIDE = 9\nprint(1)\n```\n"
    source, changed, notes = apply_function_reply(PY_PROGRAM, reply, PYTHON)
    assert changed == 1 and "RADIUS_SCALE = 0.97\nLIMIT: int = 5\n" in source
    assert "OUTSIDE = 7" in source  # outside the EVOLVE-BLOCK: never changed
    assert any("ignored 2 line(s)" in note for note in notes)


def test_an_unchanged_or_unknown_constant_is_refused_with_the_right_reason():
    same = "Keep it.\n```cpp\nconst double DISTANCE_POWER = 1.0;\n```\n"
    with pytest.raises(PatchError, match="identical to the current program"):
        apply_function_reply(CPP_PROGRAM, same, CPP)
    recommented = "Keep it.\n```cpp\nconst double DISTANCE_POWER = 1.0; /* a; b */\n```\n"
    with pytest.raises(PatchError, match="identical to the current program"):
        apply_function_reply(CPP_PROGRAM, recommented, CPP)
    unknown = "New knob.\n```cpp\nconst double T = 10;\n```\n"
    with pytest.raises(PatchError, match="or the line of a constant defined outside"):
        apply_function_reply(CPP_PROGRAM, unknown, CPP)


def test_the_prompt_mentions_constant_lines_only_when_the_program_has_some():
    sentence = "To change a constant defined outside the functions"
    assert sentence in format_instructions("function", "cpp", settings=True)
    assert sentence not in format_instructions("function", "cpp")


def test_a_reply_of_one_line_inside_a_function_with_new_numbers_edits_that_line():
    # What the 1.5B model sends when a tuning prompt lists `double scale = 2.0;` as a line whose
    # numbers may change: the line alone, not its function.
    reply = "Scale more.\n```cpp\n    double scale = 2.5;\n```\n"
    source, changed, notes = apply_function_reply(CPP_PROGRAM, reply, CPP)
    assert changed == 1 and "changed the numbers of 1 line(s)" in notes
    assert "    double scale = 2.5;\n" in source and "double scale = 2.0" not in source
    python = apply_function_reply(PY_PROGRAM, "```python\nstep = 0.25\n```\n", PYTHON)[0]
    assert "    step = 0.25\n" in python  # keeps the program's indentation
    # Same numbers: nothing changed; a line matching no line (or two) is not an edit.
    with pytest.raises(PatchError, match="identical to the current program"):
        apply_function_reply(CPP_PROGRAM, "```cpp\ndouble scale = 2.0;\n```\n", CPP)
    twice = CPP_PROGRAM.replace("double scale = 2.0;", "double scale = 2.0;\n    double scale = 3.0;")
    with pytest.raises(PatchError, match="no complete function definition"):
        apply_function_reply(twice, "```cpp\ndouble scale = 4.0;\n```\n", CPP)
