"""The improvement step's intent reading the run's store (cambrian/mutate/step/intent.py): a
score a correct child wrote is taken by every parent, the last refused score is shown to the next
score proposal with the part each perturbed copy changed, and the step stops once checks found
the evaluator blind to the solution."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from test_improve_step import STEP_TASK

from cambrian.core.events import StepScoreChecked
from cambrian.core.status import CandidateStatus
from cambrian.lang.languages import as_language
from cambrian.mutate.intent import IntentServices
from cambrian.mutate.step import wiring as step_wiring
from cambrian.mutate.step.intent import IMPROVE_STEP
from cambrian.mutate.step.python import scaffold
from cambrian.mutate.step.score_check import written_score
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store

TOUR = (Path(__file__).resolve().parents[2] / "examples" / "tsp_tour" / "initial.py").read_text()
WRAPPER = ("\n\ndef solve_tour_with_hill_climb(points):\n"
           "    return solve_tour(points)\n\n# EVOLVE-BLOCK-END")


def stored(recorder: Any, parent: int | None, source: str, notes: dict[str, Any],
           status: str = "correct") -> int:
    """A candidate as the loop leaves it, written through the recorder."""
    candidate = recorder.add_candidate(NewCandidate(
        generation=1, island=0, parent_id=parent, operator="diff", status=CandidateStatus.PENDING,
        language="python", source=source, notes=notes), parents=[parent] if parent else [])
    recorder.set_outcome(candidate, CandidateStatus(status), score=3.0,
                         error="" if status == "correct" else "refused")
    return candidate


def test_a_checked_score_is_taken_by_every_parent_and_the_proposal_writes_the_move(tmp_path: Path):
    """The score belongs to the problem, not the parent: a parent with no step of its own takes
    the newest score a correct child wrote for a step of the same form, and the proposal asks
    for the move; a score that was refused (the child is not correct) is never taken."""
    python = as_language("python")
    initial = STEP_TASK
    wired = scaffold(initial)
    assert wired is not None
    score = "def score_build(n, solution):\n    return solution * 2\n"
    refused = "def score_build(n, solution):\n    return -solution\n"
    store = Store.open(tmp_path / "run", create=True)
    try:
        recorder = Recorder(store)
        first = stored(recorder, None, initial, {})
        other = stored(recorder, first, initial.replace("return n", "return n + 1"),
                       {"intent": "tuning"})
        services = IntentServices(lambda i: store.candidates.get(i), store, python)
        rng = np.random.default_rng(0)
        # No child has written a score yet: the proposal asks for it.
        assert IMPROVE_STEP.prepare(other, services, rng).tags["focus_function"] == "score_build"
        stored(recorder, first, step_wiring.with_definition(wired.source, "score_build", refused, python),
               {"intent": "improve_step", "focus_function": "score_build"}, status="rejected")
        assert IMPROVE_STEP.prepare(other, services, rng).tags["focus_function"] == "score_build"
        stored(recorder, first, step_wiring.with_definition(wired.source, "score_build", score, python),
               {"intent": "improve_step", "focus_function": "score_build"})
        prepared = IMPROVE_STEP.prepare(other, services, rng)
        assert prepared.parent_id == other and prepared.tags["focus_function"] == "change_build"
        assert prepared.source is not None and "return solution * 2" in prepared.source
        assert "return n + 1" in prepared.source  # the drawn parent's own build, kept
        assert "return -solution" not in prepared.source
    finally:
        store.close()


def test_a_refused_score_is_shown_with_the_part_each_copy_changed(tmp_path: Path):
    """The next score proposal sees the refused score with the evaluator's and its values on
    each perturbed copy, named by the part the copy changed (OpenEvolve's function
    minimisation: the 1.5B kept scoring `best_value`, which the evaluator recomputes)."""
    python = as_language("python")
    folder = Path(__file__).resolve().parents[2] / "benchmarks" / "task_folders" \
        / "openevolve_function_minimization"
    wired = scaffold((folder / "initial_program.py").read_text())
    refused = ("def score_search_algorithm(iterations, bounds, best_x, best_y, best_value):\n"
               "    return -best_value\n")
    store = Store.open(tmp_path / "run", create=True)
    try:
        recorder = Recorder(store)
        first = stored(recorder, None, wired.source, {})
        child = stored(recorder, first, step_wiring.with_definition(
            wired.source, "score_search_algorithm", refused, python),
            {"intent": "improve_step", "focus_function": "score_search_algorithm"},
            status="rejected")
        recorder.emit(StepScoreChecked(
            candidate_id=child, accepted=False, reason="the score measures something else",
            evaluator=[0.77, 0.74, 0.76, 0.77], model=[13.6, 13.6, 13.6, 13.3],
            solution_parts=["numbers"] * 3, solution_shapes=["a float"] * 3))
        services = IntentServices(lambda i: store.candidates.get(i), store, python)
        prepared = IMPROVE_STEP.prepare(first, services, np.random.default_rng(0))
        assert prepared.tags["focus_function"] == "score_search_algorithm"
        assert prepared.tags["refused_score_shown"] == child
        note = prepared.notes[0]
        for line in ("- the solution as built: evaluator 0.77, score 13.6",
                     "- perturbed solution 1 (`best_x` changed): evaluator 0.74, score 13.6",
                     "- perturbed solution 2 (`best_y` changed): evaluator 0.76, score 13.6",
                     "- perturbed solution 3 (`best_value` changed): evaluator 0.77, score 13.3",
                     "    return -best_value"):
            assert line in note, note
        assert prepared.notes[1] == ("The solution's parts, as the program builds them: "
                                     "`best_x` is a float; `best_y` is a float; "
                                     "`best_value` is a float.")
    finally:
        store.close()


def test_the_step_stops_after_two_distinct_blind_checks_unless_one_agreed(tmp_path: Path):
    """Two checks (with different values) finding the evaluator blind to the solution turn
    the step off; the same score checked again (a resume) counts once; a check that agreed
    with the evaluator keeps it on."""
    python = as_language("python")
    store = Store.open(tmp_path / "run", create=True)
    try:
        recorder = Recorder(store)
        first = stored(recorder, None, STEP_TASK, {})

        def check(model: list[float], accepted: bool = False, reason: str = "blind") -> None:
            recorder.emit(StepScoreChecked(
                candidate_id=None, accepted=accepted, reason=reason,
                evaluator=[1.0, 1.0, 1.0], model=model, evaluator_ignores_solution=not accepted))

        def usable() -> bool:  # a fresh run's services each time: rebuilt from the store
            services = IntentServices(lambda i: store.candidates.get(i), store, python)
            return IMPROVE_STEP.usable(first, services)

        check([1.0, 2.0, 3.0])
        check([1.0, 2.0, 3.0])  # the same score, checked again after a resume
        assert usable()
        check([5.0, 4.0, 6.0])
        assert not usable()
        check([1.0, 2.0, 3.0], accepted=True, reason="agrees with the evaluator on 3 pairs")
        assert usable()
    finally:
        store.close()


def test_scores_that_raised_on_a_blind_evaluator_stop_the_step(tmp_path: Path):
    """Scores that raised carry no values (the event stores None for each), so two such checks
    count as two only where the evaluator's values differ (another parent's solution): the same
    parent checked again is one."""
    python = as_language("python")
    store = Store.open(tmp_path / "run", create=True)
    try:
        recorder = Recorder(store)
        first = stored(recorder, None, STEP_TASK, {})
        for value in (-1.95, -1.95, -1.81):
            recorder.emit(StepScoreChecked(
                candidate_id=None, accepted=False, reason="the score raised",
                evaluator=[value] * 3, model=[None] * 3, evaluator_ignores_solution=True))
            services = IntentServices(lambda i: store.candidates.get(i), store, python)
            assert IMPROVE_STEP.usable(first, services) == (value != -1.81)
    finally:
        store.close()


def test_the_step_wires_into_the_initial_programs_entry_not_a_wrapper_nothing_calls(
        tmp_path: Path):
    """A child that added `solve_tour_with_hill_climb`, which calls `solve_tour` and which
    nothing calls (the tour's defaults run, seed 1), had its step wired to that wrapper: the
    evaluator never ran it, so the step's two proposals were spent for nothing. The step now
    wires into the initial program's entry, and the wrapper goes as a leftover."""
    python = as_language("python")
    initial = TOUR
    child = initial.replace("\n# EVOLVE-BLOCK-END", WRAPPER, 1)
    assert scaffold(child).entry == "solve_tour_with_hill_climb"  # what the program alone says
    store = Store.open(tmp_path / "run", create=True)
    try:
        recorder = Recorder(store)
        first = stored(recorder, None, initial, {})
        second = stored(recorder, first, child, {"intent": "refinement"})
        services = IntentServices(lambda i: store.candidates.get(i), store, python)
        prepared = IMPROVE_STEP.prepare(second, services, np.random.default_rng(0))
        assert prepared.tags["focus_function"] == "score_solve_tour"
        assert prepared.source is not None
        assert "def improve_solve_tour(points, tour):" in prepared.source
        assert "solve_tour_with_hill_climb" not in prepared.source
    finally:
        store.close()



def test_a_score_written_beside_a_wrapper_is_checked_and_held_to_the_contract():
    """A child whose step sits at the run's entry and which also has a wrapper nothing calls:
    its written score is still one the evaluator's check looks at (else a score nobody
    checked would be reused by other parents), and a score that returns nothing breaks the
    step's contract there as it does without the wrapper."""
    python = as_language("python")
    wired = scaffold(TOUR)
    assert wired is not None
    score = "def score_solve_tour(points, tour):\n    return -len(tour)\n"
    child = step_wiring.with_definition(wired.source, "score_solve_tour", score, python)
    with_wrapper = child.replace("\n# EVOLVE-BLOCK-END", WRAPPER, 1)
    checked = written_score(with_wrapper, wired.source, "python", entry="solve_tour")
    assert checked is not None and checked.entry == "solve_tour"
    assert "solve_tour_with_hill_climb" not in checked.source  # the leftover never runs
    assert written_score(wired.source, TOUR, "python", entry="solve_tour") is None  # a stub
    silent = with_wrapper.replace("    return -len(tour)\n", "    -len(tour)\n", 1)
    assert "returns nothing" in step_wiring.step_contract_error(silent, python, "solve_tour")
    assert step_wiring.entry_of("change_solve_tour") == "solve_tour"
    assert step_wiring.entry_of("solve_tour") is None
    # The instruction names the step `prepare` wired (the run's entry), not the wrapper's.
    parent = TOUR.replace("\n# EVOLVE-BLOCK-END", WRAPPER, 1)
    text = IMPROVE_STEP.task_text(parent, python, focus="score_solve_tour")
    assert "score_solve_tour" in text and "score_solve_tour_with_hill_climb" not in text


def test_the_run_entry_is_the_task_authors_initial_program_only(tmp_path: Path):
    """The entry comes from candidate 1 when the task gave it; a first program the model wrote
    may itself hold a wrapper nothing runs, so each parent's own entry is taken then."""
    python = as_language("python")
    for written_by_llm, expected in ((False, "solve_tour"), (True, None)):
        store = Store.open(tmp_path / f"run-{written_by_llm}", create=True)
        try:
            entry = step_wiring.InitialEntry(store, python)
            assert entry() is None  # nothing stored yet
            stored(Recorder(store), None, TOUR, {"written_by_llm": True} if written_by_llm else {})
            assert entry() == expected
        finally:
            store.close()
