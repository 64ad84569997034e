"""The intent bandit (cambrian/mutate/intent_bandit.py) and what it steers: the schedule's intent
mix per island from the gains proposals realised, the improvement step's moves by their gains,
the move menu's parsing, and the check of a model-written step score (judge and variants)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from support.grammar_check import accepts, llama_cpp, native_parse_ok, tokenizer_vocab
from support.store_queries import add_candidate

from cambrian.config import MutationConfig
from cambrian.meta.move_menu import moves_grammar, parse_moves
from cambrian.mutate.intent_bandit import IntentBandit
from cambrian.mutate.schedule import MutationSchedule
from cambrian.mutate.step.intent import IMPROVE_STEP
from cambrian.mutate.step.python import scaffold
from cambrian.mutate.step.score_check import (
    MARKER,
    PARTS_MARKER,
    PERTURB_SOURCE,
    SolutionPart,
    judge,
    reported_error,
    reported_parts,
    reported_score,
    variant_sources,
    written_score,
)
from cambrian.mutate.strategies import STEP_MOVES, StrategyMenu, unfitting_moves
from cambrian.store.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_an_arm_that_gains_takes_the_weight_and_an_untried_one_keeps_a_bonus():
    bandit = IntentBandit(["a", "b", "c"], exploration=0.5, floor=0.1)
    assert bandit.factor(0, "a") == bandit.factor(0, "b")  # nothing known yet
    for _ in range(6):
        bandit.record(0, "a", 0.3)
        bandit.record(0, "b", 0.0)
    assert bandit.factor(0, "a") > bandit.factor(0, "b")
    assert bandit.factor(0, "c") > bandit.factor(0, "b")  # never tried: the largest bonus
    snapshot = bandit.snapshot(0)
    assert snapshot["pulls"] == 12 and snapshot["shares"]["a"] == pytest.approx(0.5)
    assert snapshot["gain_per_pull"] == {"a": pytest.approx(0.3), "b": 0.0, "c": None}
    assert bandit.snapshot(1)["pulls"] == 0  # each island keeps its own pulls...
    # ...and an island with none takes the run's: "a" paid elsewhere, "c" was never tried.
    assert bandit.factor(1, "a") > bandit.factor(1, "b")
    assert bandit.factor(1, "c") > bandit.factor(1, "b")
    bandit.add_arm("d")
    assert "d" in bandit.snapshot(0)["shares"]


def test_the_schedule_follows_the_gains_per_island():
    schedule = MutationSchedule(MutationConfig(types=["tuning", "strategy", "improve_step"]),
                                generations=100, patch_kinds=("diff", "full"))
    seen: list[dict] = []
    schedule.on_snapshot = seen.append
    for _ in range(10):
        schedule.record("improve_step", True, 1.2, island=1)
        schedule.record("tuning", False, 0.0, island=1)
    on_one, on_zero = schedule.weights(1.0, island=1), schedule.weights(1.0, island=0)
    assert on_one["improve_step"] > 2 * on_one["tuning"]
    # Island 0 has no pulls of its own: it takes the run's means (tuning 0.4 : improve_step
    # 0.3 by phase share alone before any pull).
    assert on_zero["improve_step"] > 2 * on_zero["tuning"]
    assert len(seen) == 4 and seen[-1]["island"] == 1 and seen[-1]["pulls"] == 20
    # ...until its own pulls say otherwise: there the step never gains and tuning does.
    for _ in range(10):
        schedule.record("improve_step", False, 0.0, island=0)
        schedule.record("tuning", True, 1.2, island=0)
    on_zero = schedule.weights(1.0, island=0)
    assert on_zero["tuning"] > 2 * on_zero["improve_step"]
    fresh = MutationSchedule(MutationConfig(types=["tuning", "strategy", "improve_step"]),
                             generations=100, patch_kinds=("diff", "full"))
    untaught = fresh.weights(1.0, island=0)
    assert untaught["tuning"] / untaught["improve_step"] == pytest.approx(0.4 / 0.3)
    rng = np.random.default_rng(3)
    picks = Counter(schedule.choose(rng, 100, True, island=1).name for _ in range(600))
    assert picks["improve_step"] > 2 * picks["tuning"]


def test_an_untried_intent_is_optimistic_and_a_step_score_waits_for_its_move():
    bandit = IntentBandit(["a", "b"], exploration=0.5, floor=0.1)
    bandit.record(0, "a", 0.0)
    assert bandit.factor(0, "b") > bandit.factor(0, "a") + 1.0 - 1e-9  # mean 1 until tried
    # A correct child that wrote the step's score changes nothing yet: not a pull of its own.
    assert IMPROVE_STEP.prepares({"focus_function": "score_solve_tour"})
    assert not IMPROVE_STEP.prepares({"focus_function": "change_solve_tour"})


def test_moves_are_parsed_from_a_small_models_reply():
    reply = ("- Nudge: move one circle's center by a small random amount\n"
             "Here are the moves:\n"
             "2. **Grow**: enlarge one radius while it overlaps nothing\n"
             "- Nudge: move one circle's center by a small random amount\n"
             "- x: too short\n")
    assert parse_moves(reply) == [
        "Nudge: move one circle's center by a small random amount",
        "Grow: enlarge one radius while it overlaps nothing"]
    assert parse_moves("- Name: change the radii of the circles, keeping them apart\n") == [
        "change the radii of the circles, keeping them apart"]  # a template's name copied
    # Names the 1.5B wrote in defaults runs (circle packing, the contest): template words, runs
    # of spaces.
    assert parse_moves("- Move   Move   Move   Move      : centers are shuffled\n"
                       "- Move   U: Changes the direction to up, keeping it valid\n") == [
        "centers are shuffled", "Move U: Changes the direction to up, keeping it valid"]
    assert moves_grammar().startswith("root ::= move{3,5}")


@pytest.mark.skipif(llama_cpp is None, reason="llama_cpp is not importable yet")
def test_the_moves_grammar_compiles_and_keeps_names_to_single_spaces() -> None:
    grammar = moves_grammar()
    assert native_parse_ok(grammar)
    with tokenizer_vocab() as model:
        good = ("- Nudge one centre: move one circle's centre by a small random amount\n"
                "- Grow: enlarge one radius while it overlaps nothing\n"
                "- Relocate: move the smallest circle to the largest gap\n")
        assert accepts(model, grammar, good)
        assert parse_moves(good)[0].startswith("Nudge one centre: ")
        assert not accepts(model, grammar, good.replace("Grow", "Move   Move"))
        assert not accepts(model, grammar, "- Grow: enlarge one radius\n")  # two lines only
        # Every name the grammar admits is parsed: one letter, or six long words (the tour's
        # "Swap the first and second-to-last" was cut to four words before).
        assert accepts(model, grammar, good.replace("Grow", "Swap the first and second-to-last"))
        edges = ("- U: step up one cell and back again\n"
                 "- Relocatecircles Nearestcorners Smallestgaps Firstpasses Secondpasses "
                 "Thirdpasses: move one circle\n"
                 "- Grow: enlarge one radius while it overlaps nothing\n")
        assert accepts(model, grammar, edges)
        assert len(parse_moves(edges)) == 3


def test_the_judge_refuses_an_opposite_or_blind_score_and_skips_invalid_solutions():
    evaluator = [1.0, None, 0.5, 1.5]
    assert judge(evaluator, [2.0, 9.0, 1.0, 3.0]).accepted  # the invalid one is not compared
    opposite = judge(evaluator, [2.0, 9.0, 3.0, 1.0])
    assert not opposite.accepted and "against the evaluator" in opposite.reason
    blind = judge(evaluator, [1.0, 1.0, 1.0, 1.0])
    assert not blind.accepted and "the same" in blind.reason
    raised = judge(evaluator, [math.nan, None, None, None])
    assert not raised.accepted and "raised" in raised.reason
    said = judge(evaluator, [math.nan, None, None, None],
                 errors=["NameError: name 'n' is not defined", "", "", ""])
    assert said.reason.endswith("a valid solution (NameError: name 'n' is not defined)")
    assert not said.ignores_solution  # the evaluator told the variants apart
    # A score that raised on an evaluator rating every changed solution as the built one
    # (function_minimum's defaults run: five scores raised there): the evaluator is blind
    # whatever the score did, but only said when the variants changed every part.
    flat = [-1.95, -1.95, -1.95, None, -1.95]
    assert judge(flat, [math.nan] * 5).ignores_solution
    assert not judge(flat, [math.nan] * 5, every_part_changed=False).ignores_solution
    assert not judge([-1.95, None, None, -1.95], [math.nan] * 4).ignores_solution  # 2 valid
    assert judge(evaluator, [None] * 4).reason.startswith("unchecked")
    assert judge([1.0, None, None], [1.0, 2.0, 3.0]).reason.startswith("unchecked")
    blind_evaluator = judge([1.0, 1.0, 1.0, None], [1.0, 2.0, 0.5, 9.0])
    assert not blind_evaluator.accepted and "does not depend" in blind_evaluator.reason
    assert blind_evaluator.ignores_solution
    # Not said when some part was never changed: the evaluator may read that one.
    untouched = judge([1.0, 1.0, 1.0, None], [1.0, 2.0, 0.5, 9.0], every_part_changed=False)
    assert untouched.accepted and not untouched.ignores_solution
    # A score of a part the evaluator ignores (the reported value, not the point): it moves
    # where the evaluator does not and stays where the evaluator moves.
    elsewhere = judge([0.985, 0.985, 0.983, 0.985, 0.981], [-2.5, -2.1, -2.5, -2.1, -2.5])
    assert not elsewhere.accepted and "measures something else" in elsewhere.reason


def test_variants_perturb_the_built_solution_and_report_the_models_score(capfd):
    source = (EXAMPLES / "circle_packing" / "initial.py").read_text()
    wired = scaffold(source)
    child = wired.source.replace(
        '    """How good `centers` and `radii` are: higher is better."""\n    return 0.0',
        '    """How good `centers` and `radii` are: higher is better."""\n'
        '    return float(np.sum(radii))')
    step = written_score(child, source, "python")
    assert step is not None and written_score(child, child, "python") is None  # not new
    variants = variant_sources(step, 4)
    built = None
    changed = 0
    for index, variant in enumerate(variants):
        centers, radii, _ = _run(variant)
        err = capfd.readouterr().err
        reported = reported_score(err)
        assert reported == pytest.approx(float(np.sum(radii)))
        # The built variant says what the solution is made of: two arrays of numbers.
        assert reported_parts(err) == ([
            SolutionPart("numbers", "a numpy array of shape (26, 2), dtype float64"),
            SolutionPart("numbers", "a numpy array of shape (26,), dtype float64")]
            if index == 0 else [])
        if index == 0:
            built = (centers, radii)
        else:
            changed += not (np.array_equal(centers, built[0]) and np.array_equal(radii, built[1]))
    assert changed == 4  # every perturbed variant differs from the solution as built
    assert reported_score(f"{MARKER} nan\n") != reported_score(f"{MARKER} nan\n")  # NaN
    assert reported_score("nothing here") is None


def _run(source: str):
    namespace: dict = {}
    exec(compile(source, "<variant>", "exec"), namespace)
    return namespace["run_packing"]()


def test_the_run_opens_with_the_step_where_a_parent_allows_it():
    config = MutationConfig(types=["tuning", "strategy", "improve_step"])
    schedule = MutationSchedule(config, generations=100, patch_kinds=("diff", "full"))
    rng = np.random.default_rng(0)
    # A parent without an entry function to wire the step to: the mix, the opening waits.
    assert schedule.choose(rng, 0, True, unusable={"improve_step"}).name != "improve_step"
    assert schedule.choose(rng, 0, True).name == "improve_step"
    later = Counter(schedule.choose(rng, 0, True).name for _ in range(300))
    assert later["improve_step"] < 150  # once: then the mix (about a fifth of the draws)
    # An opening outside `types` is skipped; [] opens with the mix.
    for opening in (["crossover"], []):
        plain = MutationSchedule(MutationConfig(types=["tuning", "strategy", "improve_step"],
                                                opening=opening),
                                 generations=100, patch_kinds=("diff", "full"))
        first = Counter(plain.choose(np.random.default_rng(seed), 0, True).name
                        for seed in range(60))
        assert 0 < first["improve_step"] < 40


def test_only_the_moves_that_fit_the_solutions_parts_are_offered(tmp_path: Path):
    """A packing's coordinates (numbers) get no swap or reversed segment, a tour (an order) no
    nudge; a part of unknown kind, or none found, keeps every move."""
    nudge, swap, reverse, relocate, several = STEP_MOVES
    assert unfitting_moves(["numbers", "numbers"]) == {swap, reverse}
    assert unfitting_moves(["order"]) == {nudge, several}
    assert unfitting_moves(["numbers", "other"]) == frozenset()
    assert unfitting_moves([]) == frozenset()
    assert reported_parts(f'{PARTS_MARKER} [["order", "a list"]]\n') == [
        SolutionPart("order", "a list")]
    assert reported_parts(f'{PARTS_MARKER} [["rubbish", "a list"]]\n') == []
    assert reported_parts(f"{PARTS_MARKER} [1, 2\n") == []

    store = Store.open(tmp_path / "run", create=True)
    try:
        menu = StrategyMenu([], store, moves=["Derived: the task's own move", *STEP_MOVES])
        parent = add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                               status="correct", language="python", source="x = 1\n")
        weights = menu.weights(parent, moves=True, exclude=unfitting_moves(["numbers"]))
        assert set(weights) == {"Derived: the task's own move", nudge, relocate, several}
        rng = np.random.default_rng(0)
        drawn = {menu.choose(rng, parent, moves=True, exclude={swap, reverse}).text
                 for _ in range(200)}
        assert swap not in drawn and reverse not in drawn and nudge in drawn
        # Excluding every move offers them all rather than none.
        assert set(menu.weights(parent, moves=True, exclude=set(menu.moves))) == set(menu.moves)
    finally:
        store.close()


def test_the_parts_of_a_solution_are_told_apart_by_kind():
    namespace: dict = {}
    exec(PERTURB_SOURCE, namespace)
    kinds = namespace["_cambrian_kinds"]
    tour = list(range(5))[::-1]
    cases = [
        ((np.zeros((26, 2)), np.ones(26)), ["numbers", "numbers"]),
        ((tour, np.array(tour)), ["order", "order"]),
        (([3, 7, 10],), ["integers"]),  # chosen indices, not an order
        (([[1, 1], [2, 2]], [[0, 1], [1, 1]], np.array([[1, 1], [2, 2]])),
         ["integers", "integers", "integers"]),  # a grid, as lists or as an array
        (([(0.1, 0.2), (0.3, 4)], 1.5, np.float64(2.0), 3), ["numbers"] * 3 + ["integers"]),
        (("abc", ["ab", "c"], [{"a": 1}], True), ["text", "text", "other", "other"]),
    ]
    for parts, expected in cases:
        assert [kind for kind, _ in kinds(parts)] == expected, parts
    assert kinds((1.5, [0, 2, 1]))[1][1] == "a list of 3 items of an int, ..."


def test_a_score_that_raises_reports_what_it_raised(capfd):
    """The check's reason (and so the next score proposal's note) says what the score raised:
    the 1.5B's nearly right tour score used an `n` it never defined."""
    source = (EXAMPLES / "tsp_tour" / "initial.py").read_text()
    wired = scaffold(source)
    child = wired.source.replace("    return 0.0", "    return 1.0 / sum(1 for i in range(n))")
    step = written_score(child, wired.source, "python")
    namespace: dict = {}
    exec(compile(variant_sources(step, 1)[0], "<variant>", "exec"), namespace)
    namespace["solve_tour"](np.random.default_rng(0).random((12, 2)))
    err = capfd.readouterr().err
    assert reported_error(err) == "NameError: name 'n' is not defined"
    assert math.isnan(reported_score(err))
    assert reported_error(f"{MARKER} 1.0\n") == ""
