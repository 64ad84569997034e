"""Python children that use a name nothing defines are refused before evaluation
(cambrian/mutate/undefined_names.py), without flagging names bound in any scope."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, write_counter_task
from test_dead_code import first_reply_replaces_value
from test_proposer_retries import _run

from cambrian.mutate.undefined_names import undefined_names, undefined_names_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PARENT = '''import numpy as np

# EVOLVE-BLOCK-START
def improve(centers, radii):
    return centers, radii
# EVOLVE-BLOCK-END
'''

LOOP_WITHOUT_HELPERS = PARENT.replace("    return centers, radii", '''    best = (centers, radii)
    best_score = score(best)
    for _ in range(10):
        candidate = change(best)
        if score(candidate) > best_score:
            best = candidate
    return best''')


def test_helpers_the_reply_never_wrote_are_named():
    assert undefined_names(PARENT, LOOP_WITHOUT_HELPERS) == ["change", "score"]
    error = undefined_names_error(PARENT, LOOP_WITHOUT_HELPERS)
    assert "`change`, `score`" in error and "NameError" in error and "define them" in error


def test_names_bound_anywhere_builtins_and_module_names_pass():
    written = LOOP_WITHOUT_HELPERS.replace("# EVOLVE-BLOCK-END", '''
def score(solution):
    total = sum(r for r in solution[1])
    return total if __name__ else max(0, total)


def change(solution):
    import random
    [x := random.random() for _ in range(2)]
    match solution:
        case (c, *rest):
            return c, rest[0] * x
    return solution
# EVOLVE-BLOCK-END''')
    assert undefined_names(PARENT, written) == []
    assert undefined_names(PARENT, "from math import *\nprint(sqrt(2))\n") == []
    assert undefined_names(PARENT, "def broken(:\n") == []  # the syntax check's job


def test_a_name_the_parent_used_undefined_too_is_not_blamed_on_the_child():
    injected = PARENT.replace("return centers, radii", "return centers, radii * SCALE")
    assert undefined_names(injected, injected.replace("SCALE", "SCALE * 2")) == []


@pytest.mark.parametrize("task", ["circle_packing", "function_minimum", "tsp_tour"])
def test_the_examples_define_every_name_they_use(task: str):
    source = (EXAMPLES / task / "initial.py").read_text()
    assert undefined_names("", source) == []


def test_the_loop_refuses_an_undefined_name_and_the_next_reply_is_evaluated(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(first_reply_replaces_value("VALUE = helper(1)\n")) as llm:
        store = _run(task, tmp_path / "run", llm, "evolution.generations=1")
        second = llm.requests[1]
    refused = store.candidates.list("patch_failed")
    assert len(refused) == 1 and "uses `helper`, which nothing in the program defines" \
        in refused[0].error
    assert "uses `helper`" in second[-1]["content"]  # the model hears which name
    assert store.candidates.list("incorrect") == []  # no evaluation spent on it
    assert max(row.id for row in store.candidates.list("correct")) > 1
