from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from algorithm_helpers import build_selector, feed, record, run_algorithm
from support.scripted_llm import ScriptedLLM

from cambrian.core.objective import MAXIMIZE, MINIMIZE
from cambrian.search.algorithms.code_merge import merge_programs
from cambrian.search.algorithms.gepa import GepaHooks
from cambrian.search.algorithms.pareto import common_ancestor, pareto_front
from cambrian.search.hooks import HookServices

PARETO_ARCHIVE = [
    record(1, 0.0, cases={"c1": 0.0, "c2": 0.0, "c3": 0.0, "c4": 0.0}),
    record(2, 2.2, cases={"c1": 1.0, "c2": 1.0, "c3": 0.0, "c4": 0.2}),  # best on c1, c2
    record(3, 1.6, cases={"c1": 0.0, "c2": 0.5, "c3": 1.0, "c4": 0.1}),  # best on c3
    record(4, 1.2, cases={"c1": 1.0, "c2": 0.2, "c3": 0.0, "c4": 0.0}),  # tied on c1, dominated by 2
    record(5, 1.6, cases={"c1": 0.5, "c2": 0.5, "c3": 0.5, "c4": 0.1}),  # best on nothing
    record(6, 0.3, cases={"c1": 0.0, "c2": 0.0, "c3": 0.0, "c4": 0.3}),  # best on c4
]


def gepa_selector(options=None, objective=MAXIMIZE):
    sel = build_selector("gepa", options)
    sel.objective = objective
    return sel


def test_front_excludes_dominated_programs_and_weights_by_cases_won():
    sel = gepa_selector()
    feed(sel, *PARETO_ARCHIVE)
    assert sel.front() == {2: 2, 3: 1, 6: 1}
    rng = np.random.default_rng(0)
    counts = Counter(sel.sample(rng).parent_id for _ in range(4000))
    assert set(counts) == {2, 3, 6}
    assert counts[2] / 4000 == pytest.approx(0.5, abs=0.03)
    assert counts[3] / 4000 == pytest.approx(0.25, abs=0.03)


def test_minimisation_tasks_prefer_low_case_scores():
    sel = gepa_selector(objective=MINIMIZE)
    feed(sel, record(1, -9.0, cases={"c1": 4, "c2": 5}), record(2, -6.0, cases={"c1": 1, "c2": 5}),
         record(3, -4.0, cases={"c1": 2, "c2": 2}), record(4, -7.0, cases={"c1": 1, "c2": 6}))
    assert sel.front() == {2: 1, 3: 1}


def test_without_cases_public_metrics_are_the_objectives():
    sel = gepa_selector({"metric_directions": {"time": "minimize"}})
    feed(sel, record(1, 1.0, metrics={"accuracy": 0.5, "time": 3.0}),
         record(2, 2.0, metrics={"accuracy": 0.9, "time": 9.0}),
         record(3, 1.5, metrics={"accuracy": 0.7, "time": 1.0}),
         record(4, 0.5, metrics={"accuracy": 0.6, "time": 2.0, "label": "text is ignored"}))
    assert sel.front() == {2: 1, 3: 1}
    assert pareto_front({7: {"fitness": 1.0}, 8: {"fitness": 3.0}}) == {8: 1}


def test_guidance_asks_to_diagnose_the_weakest_cases_first():
    sel = gepa_selector({"weak_cases_shown": 2})
    feed(sel, *PARETO_ARCHIVE)
    guidance = sel.reflection(3, sel.score_table())
    assert "c1: 0 (best seen 1)" in guidance and "c2: 0.5 (best seen 1)" in guidance
    assert "c3" not in guidance
    assert "diagnose" in guidance and guidance.index("diagnose") < guidance.index("change the code")
    assert sel.sample(np.random.default_rng(0)).guidance.startswith("Reflect before editing")


# ---------------------------------------------------------------------------- merge

ANCESTOR = '''import math

# EVOLVE-BLOCK-START
SCALE = 1


def area(r):
    return math.pi * r * r


def perimeter(r):
    return 2 * math.pi * r
# EVOLVE-BLOCK-END


def run():
    return area(SCALE), perimeter(SCALE)
'''

# Descendant A rewrote area and added a helper after it.
CHILD_A = ANCESTOR.replace("    return math.pi * r * r\n",
                           "    return math.pi * r ** 2\n\n\ndef volume(r):\n    return 4 * r ** 3\n")
# Descendant B changed SCALE and perimeter and appended a function.
CHILD_B = ANCESTOR.replace("SCALE = 1", "SCALE = 2").replace(
    "    return 2 * math.pi * r\n",
    "    return math.tau * r\n\n\ndef diameter(r):\n    return 2 * r\n")

MERGED = '''import math

# EVOLVE-BLOCK-START
SCALE = 2


def area(r):
    return math.pi * r ** 2


def volume(r):
    return 4 * r ** 3


def perimeter(r):
    return math.tau * r


def diameter(r):
    return 2 * r
# EVOLVE-BLOCK-END


def run():
    return area(SCALE), perimeter(SCALE)
'''


def test_python_merge_takes_each_region_from_the_parent_that_changed_it():
    assert merge_programs(ANCESTOR, CHILD_A, CHILD_B, python=True) == MERGED


def test_a_region_both_parents_changed_comes_from_the_preferred_parent():
    other = CHILD_B.replace("    return math.pi * r * r\n", "    return 3.14 * r * r\n")
    merged = merge_programs(ANCESTOR, CHILD_A, other, python=True)
    assert "math.pi * r ** 2" in merged and "3.14" not in merged and "SCALE = 2" in merged
    # Nothing new to evaluate: the merge would equal one parent.
    assert merge_programs(ANCESTOR, CHILD_A, ANCESTOR, python=True) is None


def test_line_based_merge_for_other_languages():
    base = ("// EVOLVE-BLOCK-START\nconst int N = 10;\n\n// adds one\nint f(int x) {\n"
            "    return x + 1;\n}\n\nint g(int x) {\n    return x * 2;\n}\n"
            "// EVOLVE-BLOCK-END\nint main() { return f(g(N)); }\n")
    preferred = base.replace("return x + 1;", "return x + 2;")
    other = base.replace("N = 10", "N = 20").replace("return x * 2;", "return x * 3;")
    merged = merge_programs(base, preferred, other, python=False)
    assert merged == base.replace("return x + 1;", "return x + 2;").replace(
        "N = 10", "N = 20").replace("return x * 2;", "return x * 3;")


class FakeStore:
    def __init__(self, sources: dict[int, str]) -> None:
        self.candidates = SimpleNamespace(
            get=lambda candidate_id: SimpleNamespace(source=sources[candidate_id]))
        self.meta = SimpleNamespace(
            get=lambda key: "program.py" if key == "program_filename" else None)


def gepa_hooks(sel, *, store=None, evaluate_cases=None, case_ids=(), objective=MAXIMIZE):
    services = HookServices(store=store or FakeStore({}),
                            objective=objective, problem="",
                            gateway=None, model_label="", record_child=lambda g, c: None,
                            evaluate_cases=evaluate_cases, case_ids=case_ids)
    return GepaHooks(sel, services, sel.context.options)


def test_merge_hook_combines_two_front_members_once():
    sel = build_selector("gepa", {"merge_probability": 1.0})
    store = FakeStore({1: ANCESTOR, 2: CHILD_A, 3: CHILD_B})
    hooks = gepa_hooks(sel, store=store)
    feed(sel, record(1, 0.0, cases={"c1": 0, "c2": 0, "c3": 0}),
         record(2, 2.0, parent=1, cases={"c1": 1, "c2": 1, "c3": 0}),  # better on more cases
         record(3, 1.0, parent=1, cases={"c1": 0, "c2": 0, "c3": 1}))
    rng = np.random.default_rng(0)
    child = hooks.direct_child(rng)
    assert child is not None and child.source == MERGED
    assert (child.parent_id, child.other_parent_ids, child.operator) == (2, (3,), "merge")
    assert hooks.direct_child(rng) is None  # the pair was tried already
    saved = hooks.state()
    assert saved == {"attempted_pairs": [[2, 3]], "merges": 1}
    fresh = gepa_hooks(sel, store=store)
    fresh.load_state(saved)
    assert fresh.merge_candidates() == []


def test_only_relatives_that_are_not_ancestors_of_each_other_are_merged():
    sel = build_selector("gepa", {"merge_probability": 1.0})
    hooks = gepa_hooks(sel)
    feed(sel, record(1, 0.0, cases={"c1": 0, "c2": 0, "c3": 0}),
         record(2, 1.0, parent=1, cases={"c1": 1, "c2": 0, "c3": 0}),
         record(3, 1.0, parent=2, cases={"c1": 0, "c2": 1, "c3": 0}),
         record(4, 1.0, cases={"c1": 0, "c2": 0, "c3": 1}))  # no known ancestor
    assert sel.front() == {2: 1, 3: 1, 4: 1}
    assert common_ancestor(2, 3, sel.programs) is None  # 2 is 3's parent
    assert common_ancestor(3, 4, sel.programs) is None
    assert hooks.merge_candidates() == []
    feed(sel, record(5, 1.0, parent=2, cases={"c1": 0, "c2": 0, "c3": 0, "c4": 1}))
    assert hooks.merge_candidates() == [(3, 5, 2)]


# ---------------------------------------------------------------------------- minibatch


def case_evaluator(score_for_source: dict[str, float], calls: list):
    async def evaluate_cases(source, case_ids, work_dir):
        calls.append((source, list(case_ids), work_dir))
        if source not in score_for_source:
            return {}  # e.g. a compile error: no case ran
        return {case: score_for_source[source] for case in case_ids}
    return evaluate_cases


async def test_minibatch_screen_accepts_only_a_child_better_on_the_same_cases(tmp_path: Path):
    sel = build_selector("gepa", {"minibatch_size": 3})
    calls: list = []
    evaluate = case_evaluator({"better": 1.5, "equal": 1.0, "worse": 0.5}, calls)
    hooks = gepa_hooks(sel, evaluate_cases=evaluate, case_ids=("a", "b", "c", "d", "e"))
    feed(sel, record(1, 5.0, cases={case: 1.0 for case in "abcde"}))
    assert await hooks.screen("better", 1, tmp_path) is None
    reason = await hooks.screen("worse", 1, tmp_path)
    assert reason.startswith("minibatch:") and "not better than parent 1's 3" in reason
    assert "not better" in await hooks.screen("equal", 1, tmp_path)
    assert "no score" in await hooks.screen("does not compile", 1, tmp_path)
    assert all(len(cases) == 3 and set(cases) <= set("abcde") for _, cases, _ in calls)
    assert all(work_dir == tmp_path / "minibatch" for _, _, work_dir in calls)
    # The same child always meets the same minibatch.
    await hooks.screen("better", 1, tmp_path)
    assert calls[0][1] == calls[-1][1]


async def test_minibatch_screen_in_a_minimisation_task(tmp_path: Path):
    sel = build_selector("gepa")
    hooks = gepa_hooks(sel, objective=MINIMIZE, case_ids=("a", "b", "c"),
                       evaluate_cases=case_evaluator({"lower": 0.5, "higher": 2.0}, []))
    feed(sel, record(1, -3.0, cases={"a": 1.0, "b": 1.0, "c": 1.0}))
    assert await hooks.screen("lower", 1, tmp_path) is None
    assert await hooks.screen("higher", 1, tmp_path) is not None


async def test_screen_passes_everything_when_cases_cannot_be_evaluated(tmp_path: Path):
    sel = build_selector("gepa")
    feed(sel, record(1, 1.0, cases={"a": 1.0}), record(2, 1.0, parent=1),
         record(3, None, parent=1, cases={"a": 0.0}))
    assert await gepa_hooks(sel).screen("anything", 1, tmp_path) is None
    calls: list = []
    with_cases = gepa_hooks(sel, evaluate_cases=case_evaluator({}, calls), case_ids=("a",))
    assert await with_cases.screen("anything", 2, tmp_path) is None  # parent has no case scores
    assert await with_cases.screen("anything", 3, tmp_path) is None  # a fix of a failing parent
    assert await with_cases.screen("anything", None, tmp_path) is None  # the initial program
    assert calls == []


# ---------------------------------------------------------------------------- end to end

TRADE_OFF_INITIAL = """# EVOLVE-BLOCK-START
A = 1
B = 1
# EVOLVE-BLOCK-END


def run():
    return A, B
"""

# Two objectives pulling apart: raising A costs objective "b", so programs that raised A and
# programs that raised B coexist on the front, and their merge (both raised) beats both.
TRADE_OFF_EVALUATOR = """import runpy


def evaluate(program_path):
    a, b = runpy.run_path(program_path)["run"]()
    return {"combined_score": float(a + b), "public": {"a": a, "b": b - a},
            "text_feedback": f"A is {a}, B is {b}"}
"""


def raise_a_or_b(messages, index):
    user = next(m["content"] for m in messages if m["role"] == "user")
    code = re.search(r"## Current program\n```[a-z]*\n(.*?)```", user, re.DOTALL).group(1)
    a = int(re.search(r"^A = (-?\d+)", code, re.MULTILINE).group(1))
    b = int(re.search(r"^B = (-?\d+)", code, re.MULTILINE).group(1))
    if index % 2 == 0:
        a += index + 1
    else:
        b += index + 1
    return f"Raise one of them\n```python\nA = {a}\nB = {b}\n```\n"


def test_gepa_run_merges_front_members_and_resumes(tmp_path: Path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "initial.py").write_text(TRADE_OFF_INITIAL)
    (task / "evaluate.py").write_text(TRADE_OFF_EVALUATOR)
    with ScriptedLLM(raise_a_or_b) as llm:
        run = run_algorithm(task, tmp_path / "run", llm, "gepa", 10,
                            "search.options.merge_probability=1.0",
                            "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]")
    assert run.summary.evaluations == 10
    assert run.summary.best_score > run.summary.initial_score
    merges = [r for r in run.store.candidates.list() if r.operator == "merge"]
    assert merges and merges[0].notes["llm_free"] is True
    assert run.live["hooks"]["merges"] == len(merges)
    prompts = [m[-1]["content"] for m in run.requests]
    assert any("Reflect before editing" in p and "weakest objectives" in p for p in prompts)
    assert run.resumed == run.live
