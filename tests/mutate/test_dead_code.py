"""Children that cannot behave differently from their parent are recognised from the syntax tree
(cambrian/mutate/dead_code.py), and the loop refuses them before evaluation."""

from __future__ import annotations

from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from test_proposer_retries import _run

from cambrian.mutate.dead_code import behaviour_unchanged

PARENT = '''import numpy as np

# EVOLVE-BLOCK-START
def construct():
    """Two circles."""
    return np.array([0.25, 0.75]) * 0.9  # scale
# EVOLVE-BLOCK-END


def run():
    return construct()
'''

UNUSED_HELPERS = PARENT.replace("# EVOLVE-BLOCK-END", '''

def mutate(population, rate):
    return [jitter(p, rate) for p in population]


def jitter(p, rate):
    return p + np.random.uniform(-rate, rate)
# EVOLVE-BLOCK-END''')


def first_reply_replaces_value(added: str):
    """A scripted model whose first reply replaces the counter's `VALUE = 1` line by ``added``
    (as an edit or a whole block, whichever the prompt asks for); then it counts up."""

    def reply(messages, index):
        if index > 0:
            return incrementing(messages, index)
        if "SEARCH" in messages[-1]["content"].split("## Your task")[-1]:
            return f"Change it.\n<<<<<<< SEARCH\nVALUE = 1\n=======\n{added}>>>>>>> REPLACE\n"
        return f"Change it.\n```python\n# EVOLVE-BLOCK-START\n{added}# EVOLVE-BLOCK-END\n```\n"

    return reply


def test_new_functions_nothing_calls_are_named():
    error = behaviour_unchanged(PARENT, UNUSED_HELPERS)
    assert "only adds `mutate`, `jitter`" in error and "behave exactly as before" in error


def test_comment_and_layout_edits_alone_change_nothing():
    edited = PARENT.replace("# scale", "# the scale factor").replace("return construct()",
                                                                      "return  construct( )")
    assert "only comments or layout" in behaviour_unchanged(PARENT, edited)
    # ...also next to an unused helper: the helper is named.
    assert "only adds `mutate`" in behaviour_unchanged(
        PARENT, UNUSED_HELPERS.replace("# scale", "# new comment"))


def test_real_changes_pass():
    called = UNUSED_HELPERS.replace("return np.array([0.25, 0.75]) * 0.9  # scale",
                                    "return np.array(mutate([0.25, 0.75], 0.01)) * 0.9")
    assert behaviour_unchanged(PARENT, called) == ""
    helper_and_value = UNUSED_HELPERS.replace("* 0.9", "* 1.0")
    assert behaviour_unchanged(PARENT, helper_and_value) == ""
    assert behaviour_unchanged(PARENT, PARENT.replace('"""Two circles."""', '"""Two."""')) == ""
    by_name = UNUSED_HELPERS.replace("return construct()",
                                     'return globals()["mutate"]([construct()], 0.0)[0]')
    assert behaviour_unchanged(PARENT, by_name) == ""
    assert behaviour_unchanged(PARENT, "def broken(:\n") == ""  # the syntax check's job


def test_the_loop_refuses_a_dead_addition_and_restarts(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    dead_first = first_reply_replaces_value("VALUE = 1\n\n\ndef unused():\n    return 2\n")
    with ScriptedLLM(dead_first) as llm:
        store = _run(task, tmp_path / "run", llm, "evolution.generations=1",
                     "prompt.retry_style=continue")
        second = llm.requests[1]
    refused = store.candidates.list("patch_failed")
    assert len(refused) == 1 and "only adds `unused`" in refused[0].error
    assert [m["role"] for m in second] == ["system", "user"]  # restarted, not continued
    assert "only adds `unused`" in second[1]["content"]
    assert max(row.id for row in store.candidates.list("correct")) > 1  # the next reply was evaluated


NEW_METHOD = '''import random

# EVOLVE-BLOCK-START
def solve(points):
    """Nearest neighbour."""
    return sorted(points)


def anneal(points, steps):
    tour = solve(points)
    for _ in range(steps):
        tour = swap(tour)
    return tour


def swap(tour):
    i, j = random.randrange(len(tour)), random.randrange(len(tour))
    tour[i], tour[j] = tour[j], tour[i]
    return tour
# EVOLVE-BLOCK-END


def run():
    return solve([3, 1, 2])
'''

TOUR_PARENT = NEW_METHOD.replace(NEW_METHOD[NEW_METHOD.index("\n\ndef anneal"):
                                            NEW_METHOD.index("# EVOLVE-BLOCK-END")], "\n")


def test_a_new_method_nothing_runs_is_refused_when_one_was_asked_for():
    # The 1.5B asked for simulated annealing wrote it, changed a docstring and never called it.
    child = NEW_METHOD.replace('"""Nearest neighbour."""', '"""Nearest neighbour first."""')
    error = behaviour_unchanged(TOUR_PARENT, child, new_method_asked=True)
    assert "defines `anneal`, `swap`, but nothing in the program calls them" in error
    assert "make `solve` or `run` use the new code" in error
    # Not asked for a method: the docstring is a change, the child is evaluated.
    assert behaviour_unchanged(TOUR_PARENT, child) == ""
    # Called (directly; its helper through it): the method runs.
    wired = child.replace("return solve([3, 1, 2])", "return anneal([3, 1, 2], 5)")
    assert behaviour_unchanged(TOUR_PARENT, wired, new_method_asked=True) == ""
    # Only a helper of the method left uncalled: named alone.
    helper_left = wired.replace("tour = swap(tour)", "tour = list(reversed(tour))")
    error = behaviour_unchanged(TOUR_PARENT, helper_left, new_method_asked=True)
    assert "defines `swap`, but nothing in the program calls it" in error


def test_a_strategy_proposal_whose_method_is_never_called_is_refused(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    uncalled_first = first_reply_replaces_value(
        "VALUE = 2\n\n\ndef count_up(value):\n    return value + 1\n")
    with ScriptedLLM(uncalled_first) as llm:
        store = _run(task, tmp_path / "run", llm, "evolution.generations=1",
                     "mutation.types=[strategy]", "mutation.general_strategies=false",
                     'mutation.strategies=["Count up in steps of one"]')
    refused = store.candidates.list("patch_failed")
    assert len(refused) == 1
    assert "defines `count_up`, but nothing in the program calls it" in refused[0].error
    assert "count_up" not in store.candidates.get(max(
        row.id for row in store.candidates.list("correct"))).source
