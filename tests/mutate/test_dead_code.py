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
    added = "VALUE = 1\n\n\ndef unused():\n    return 2\n"

    def dead_first(messages, index):
        if index > 0:
            return incrementing(messages, index)
        if "SEARCH" in messages[-1]["content"].split("## Your task")[-1]:
            return f"Add a helper.\n<<<<<<< SEARCH\nVALUE = 1\n=======\n{added}>>>>>>> REPLACE\n"
        return f"Add a helper.\n```python\n# EVOLVE-BLOCK-START\n{added}# EVOLVE-BLOCK-END\n```\n"

    with ScriptedLLM(dead_first) as llm:
        store = _run(task, tmp_path / "run", llm, "evolution.generations=1",
                     "prompt.retry_style=continue")
        second = llm.requests[1]
    refused = store.candidates.list("patch_failed")
    assert len(refused) == 1 and "only adds `unused`" in refused[0].error
    assert [m["role"] for m in second] == ["system", "user"]  # restarted, not continued
    assert "only adds `unused`" in second[1]["content"]
    assert max(row.id for row in store.candidates.list("correct")) > 1  # the next reply was evaluated
