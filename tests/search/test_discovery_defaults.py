"""Discovery by default (issue 31), through the real loop with a scripted model and the task's
evaluator run as a subprocess: the improvement step is on without being listed, the model
derives the step's moves from the problem, a score it writes is checked against the evaluator
(refused when it orders solutions the other way), and the intent bandit's shares are recorded
and shown by `cambrian status`."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM

from cambrian.api import start
from cambrian.config import build_config
from cambrian.core.events import IntentBanditSnapshot, MovesDerived, StepScoreChecked
from cambrian.core.objective import MAXIMIZE
from cambrian.mutate.schedule import build_mutation_schedule
from cambrian.mutate.strategies import STEP_MOVES
from cambrian.status import run_status
from cambrian.store.store import Store

INITIAL = '''"""Five numbers in [0, 1] as close to 0.3 as possible."""

import numpy as np


# EVOLVE-BLOCK-START
def build(n):
    """n numbers, spread evenly over [0, 1]."""
    values = np.linspace(0.0, 1.0, n)
    return values
# EVOLVE-BLOCK-END


def run():
    return build(5)
'''

EVALUATOR = '''"""Scores five numbers in [0, 1]: minus their squared distance to 0.3, summed."""
import runpy

import numpy as np


def evaluate(program_path):
    values = np.asarray(runpy.run_path(program_path)["run"](), dtype=float)
    if values.shape != (5,) or not np.all((values >= 0) & (values <= 1)):
        return {"correct": False, "error": "five numbers in [0, 1] are needed"}
    return {"combined_score": float(-np.sum((values - 0.3) ** 2))}
'''

PROBLEM = ("Choose five numbers, each in [0, 1], whose squared distances to 0.3 sum to as "
           "little as possible. A solution is a numpy array of five numbers.\n")

MOVES_REPLY = ("- Nudge: move one number by a small random amount, clipped to [0, 1]\n"
               "- Reset: set one number to a random value in [0, 1]\n"
               "- Pull: move one number halfway towards 0.3\n")

RIGHT_SCORE = "return -float(np.sum((values - 0.3) ** 2))"
WRONG_SCORE = "return float(np.sum((values - 0.3) ** 2))"  # the opposite order


def responder(score_line: str, after_refusal: str | None = None,
              prompts: list[str] | None = None):
    """The script: ``score_line`` as the score, ``after_refusal`` once the prompt shows a
    refused score; each step prompt's user message appended to ``prompts``."""
    def reply(messages: list[dict[str, str]], index: int) -> str:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = messages[-1]["content"]
        if "Write `" in user and "_build(n, values)" in user and prompts is not None:
            prompts.append(user)
        line = (after_refusal if after_refusal and "was refused" in user else score_line)
        line = line.replace("{index}", str(index))
        if "local-search moves" in system:
            return MOVES_REPLY
        if "Write `" not in user:  # another intent's proposal: a reply that cannot be used
            return "I would leave the program as it is."
        if "Study the problem statement" in user:
            return ("SUMMARY:\n- five numbers near 0.3\nINPUT AND OUTPUT:\n- an array\n"
                    "SCORING:\n- minus the squared distance\nCONSTRAINTS:\n- in [0, 1]\n"
                    "APPROACHES:\n1. move the numbers to 0.3\n")
        asked = re.search(r"Write `(score|change)_build\(n, values\)`", user)
        assert asked, user[-600:]
        if asked.group(1) == "score":
            return (f"Score it\n```python\ndef score_build(n, values):\n"
                    f"    {line}  # v{index}\n```\n")
        return (f"Nudge one\n```python\ndef change_build(n, values):\n    import random\n"
                f"    i = random.randrange(len(values))\n"
                f"    values[i] = min(1.0, max(0.0, values[i] + random.gauss(0, 0.05)))  "
                f"# v{index}\n    return values\n```\n")
    return reply


def write_task(root: Path, evaluator: str = EVALUATOR) -> Path:
    root.mkdir(parents=True)
    (root / "initial.py").write_text(INITIAL)
    (root / "evaluate.py").write_text(evaluator)
    (root / "problem.md").write_text(PROBLEM)
    return root


def run(tmp_path: Path, score_line: str, generations: int,
        settings: tuple[str, ...] = ("mutation.types=[improve_step]", "database.num_islands=1"),
        after_refusal: str | None = None, asked: list[str] | None = None,
        evaluator: str = EVALUATOR) -> Store:
    task = write_task(tmp_path / "task", evaluator)
    with ScriptedLLM(responder(score_line, after_refusal, asked)) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config(patch_format="function")) + "]",
            "novelty.enabled=false", "meta.enabled=false",
            f"evolution.generations={generations}", "evolution.max_proposals_in_flight=1",
            # Only the step's intent, so that every proposal is one the script answers; the
            # moves are the model's (the general ones off), the score unchecked by the task.
            "mutation.schedule=linear", "mutation.general_moves=false",
            # by default one island: its bandit's snapshots come every 5 pulls
            *settings])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    return Store.open(tmp_path / "run")


def test_a_score_that_agrees_with_the_evaluator_is_kept_and_the_derived_moves_pay(
        tmp_path: Path):
    store = run(tmp_path, RIGHT_SCORE, generations=8)
    try:
        derived = store.events.of_type(MovesDerived)
        assert len(derived) == 1 and len(derived[0].moves) == 3
        assert derived[0].moves[0].startswith("Nudge: move one number")
        checks = store.events.of_type(StepScoreChecked)
        # One check: later children wrote the same score (another comment): the same verdict.
        assert len(checks) == 1 and checks[0].accepted, [c.reason for c in checks]
        assert "agrees with the evaluator" in checks[0].reason
        assert checks[0].evaluator[0] == pytest.approx(-(0.09 + 0.0025 + 0.04 + 0.2025 + 0.49))
        assert checks[0].model[0] == pytest.approx(checks[0].evaluator[0])
        children = [r for r in store.candidates.list() if r.id != 1]
        movers = [r for r in children if r.notes.get("focus_function") == "change_build"]
        assert movers and all(r.notes["strategy"] in derived[0].moves for r in movers)
        best = store.candidates.best(MAXIMIZE)
        assert best.score > -0.8 and best.notes.get("focus_function") == "change_build"
        # The bandit counts the moves' gains; a score child only prepares them.
        snapshots = store.events.of_type(IntentBanditSnapshot)
        counted = [r for r in children if r.status.evaluated and not (
            r.status == "correct" and r.notes["focus_function"] == "score_build")
            or r.notes.get("reply_refused")]
        latest = {snapshot.island: snapshot for snapshot in snapshots}
        # (a snapshot every 5 pulls of an island: each island's latest lags by at most 4)
        pulls = sum(s.pulls for s in latest.values())
        assert len(counted) - 4 * len(latest) <= pulls <= len(counted)
        assert any(s.gain_per_pull["improve_step"] > 0 for s in latest.values())
        # A resumed run rebuilds the bandit from the store: the same pulls per island.
        config = build_config([store.runs.info().config])
        rebuilt = build_mutation_schedule(config, store, MAXIMIZE)
        assert sum(rebuilt.bandit.pulls(i) for i in rebuilt.bandit.islands) == len(counted)
        for island, snapshot in latest.items():
            assert rebuilt.bandit.pulls(island) - snapshot.pulls < 5
        status = run_status(store)
        assert status.intent_bandit[-1].shares == {"improve_step": 1.0}
        assert status.derived_moves is not None and status.score_checks
    finally:
        store.close()


def test_a_score_that_orders_solutions_the_other_way_is_refused(tmp_path: Path):
    store = run(tmp_path, WRONG_SCORE, generations=3)
    try:
        checks = store.events.of_type(StepScoreChecked)
        assert len(checks) == 1 and not checks[0].accepted
        assert "orders solutions against the evaluator" in checks[0].reason
        refused = [r for r in store.candidates.list("rejected")]
        assert refused and all("improvement-step score refused" in r.error for r in refused)
        assert all(r.notes.get("focus_function") == "score_build" for r in refused)
        # No score was kept, so no move was ever asked for.
        assert not [r for r in store.candidates.list() if
                    r.notes.get("focus_function") == "change_build"]
    finally:
        store.close()


def test_the_move_is_asked_for_on_the_child_that_wrote_the_score_next(tmp_path: Path):
    """Among other intents and islands, a child whose step got its score (checked) is the
    parent of the next proposal, which writes the move: the score alone gains nothing."""
    store = run(tmp_path, RIGHT_SCORE, generations=10, settings=(
        "mutation.types=[improve_step, refinement, tuning]", "database.num_islands=3",
        "evolution.seed=3"))
    try:
        rows = store.candidates.list()
        scorers = [r for r in rows if r.status == "correct"
                   and r.notes.get("focus_function") == "score_build"]
        assert scorers, [(r.id, r.status, r.notes.get("intent")) for r in rows]
        followers = [r for r in rows if r.notes.get("follows_up")]
        assert followers
        for follower in followers:
            assert follower.parent_id in {r.id for r in scorers}
            assert follower.notes["intent"] == "improve_step"
            assert follower.notes["focus_function"] == "change_build"
            parent = store.candidates.get(follower.parent_id)
            assert follower.island == parent.island
        # Each scorer is followed up at most once, and the first one was.
        assert len({f.parent_id for f in followers}) == len(followers)
        assert scorers[0].id in {f.parent_id for f in followers}
        # Resumed: a scorer with children is not followed up again.
        config = build_config([store.runs.info().config])
        rebuilt = build_mutation_schedule(config, store, MAXIMIZE)
        again = rebuilt.follow_up(lambda child: bool(store.candidates.children(child)))
        assert not rebuilt.opening  # the run opened with the step already
        assert rows[1].notes["intent"] == "improve_step"  # its first proposal
        assert again is None or again[0] not in {f.parent_id for f in followers}
    finally:
        store.close()


def test_a_refused_score_is_shown_to_the_next_score_proposal(tmp_path: Path):
    """The proposal that writes the score again sees why the last one was refused, with the
    evaluator's and that score's values and its text; the score written then passes."""
    asked: list[str] = []
    store = run(tmp_path, WRONG_SCORE, generations=4, after_refusal=RIGHT_SCORE, asked=asked)
    try:
        checks = store.events.of_type(StepScoreChecked)
        assert [c.accepted for c in checks] == [False, True], [c.reason for c in checks]
        # (proposals made while the first score was being checked could not show it)
        asked = [a for a in asked if "Write `score_build" in a]
        assert "was refused" not in asked[0]
        shown = next(a for a in asked if "was refused" in a)
        assert "Your previous `score_build` was refused" in shown
        assert "orders solutions against the evaluator" in shown
        built = f"the solution as built: evaluator {checks[0].evaluator[0]:.6g}, " \
                f"score {checks[0].model[0]:.6g}"
        assert built in shown and "perturbed solution 1: evaluator" in shown
        assert WRONG_SCORE in shown
        refused = store.candidates.list("rejected")[0]
        second = next(r for r in store.candidates.list("correct")
                      if r.notes.get("focus_function") == "score_build")
        assert second.notes["refused_score_shown"] == refused.id
    finally:
        store.close()


BLIND_EVALUATOR = EVALUATOR.replace(
    'return {"combined_score": float(-np.sum((values - 0.3) ** 2))}',
    'return {"combined_score": 1.0}  # whatever the numbers are')


def test_the_step_stops_once_the_evaluator_ignores_the_solution_twice(tmp_path: Path):
    """An evaluator that rates every changed solution as the built one (it scores something
    else than the solution returned): after two scores checked so, the step is not proposed."""
    store = run(tmp_path, "return -float(np.sum((values - 0.3) ** 2)) + {index}",
                generations=12, evaluator=BLIND_EVALUATOR, settings=(
                    "mutation.types=[improve_step, refinement]", "database.num_islands=1",
                    "mutation.opening=[]"))
    try:
        checks = store.events.of_type(StepScoreChecked)
        assert len(checks) >= 2 and all(c.evaluator_ignores_solution for c in checks)
        assert all(not c.accepted for c in checks)
        # (a few step proposals were made while the first two were being checked)
        last = store.candidates.list()[-5:]
        assert all(r.notes.get("intent") == "refinement" for r in last), [
            (r.id, r.notes.get("intent")) for r in store.candidates.list()]
    finally:
        store.close()


def test_the_moves_drawn_fit_what_the_solution_is_made_of(tmp_path: Path):
    """The check finds the solution an array of numbers; the general moves for orders (swap,
    reverse) are then never drawn, the numeric ones and the derived ones are."""
    asked: list[str] = []
    store = run(tmp_path, RIGHT_SCORE, generations=14, settings=(
        "mutation.types=[improve_step]", "database.num_islands=1",
        "mutation.general_moves=true"), asked=asked)
    try:
        checks = store.events.of_type(StepScoreChecked)
        assert checks and checks[0].solution_parts == ["numbers"]
        assert checks[0].solution_shapes == ["a numpy array of shape (5,), dtype float64"]
        checked_at = store.events.list(StepScoreChecked)[0].created_at
        moves = [r for r in store.candidates.list()
                 if r.notes.get("focus_function") == "change_build"]
        # (one move recorded after the check could have been drawn while it ran)
        late = [r.notes["strategy"] for r in moves if r.created_at > checked_at][1:]
        assert len(late) >= 4, [r.notes["strategy"][:20] for r in moves]
        orders = {m for m in STEP_MOVES if m.startswith(("Swap", "Reverse"))}
        assert not orders & set(late), late
        assert set(late) - set(store.events.of_type(MovesDerived)[0].moves)  # general ones too
        # Once checked, a step proposal is told what the solution is made of.
        told = "The solution's parts, as the program builds them: `values` is a numpy array " \
               "of shape (5,), dtype float64."
        assert told not in asked[0] and told in asked[-1]
    finally:
        store.close()
