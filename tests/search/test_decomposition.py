"""Decomposition (seed 004 §10.2-10.3, §10.10): sub-problems as sets of test cases, each with
its population and share of the proposals, strategy transfer between them, and the leaders
combined by the task's combiner (run contained) or by a crossover proposal."""

from __future__ import annotations

import asyncio
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from cambrian.config.decomposition import DecompositionConfig, SubproblemConfig
from cambrian.core.bus import EventBus
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import StrategyTransfer, SubsolutionsCombined
from cambrian.core.hooks import DirectChild, SlotContext
from cambrian.core.objective import MAXIMIZE, MINIMIZE
from cambrian.core.status import CandidateStatus
from cambrian.search.decomposition import Decomposition, SubproblemBook
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store

SUBPROBLEMS = [SubproblemConfig(name="small", cases=["s*"], description="n <= 10"),
               SubproblemConfig(name="large", cases=["l*"], importance=2.0)]


def cases(**scores: float) -> dict[str, float]:
    return dict(scores)


def test_each_subproblem_ranks_programs_on_its_own_cases() -> None:
    book = SubproblemBook(SUBPROBLEMS, MAXIMIZE, population=2)
    book.observe(1, cases(s1=10, s2=10, l1=1, l2=1))  # good on small cases
    book.observe(2, cases(s1=2, s2=2, l1=9, l2=7))  # good on large ones
    book.observe(3, cases(s1=9, s2=11, l1=2, l2=2, x9=100))  # x9: no sub-problem's case
    assert [i for i, _ in book.leaders("small")] == [1, 3]  # a tie: the earlier first
    assert book.leaders("large") == [(2, 8.0), (3, 2.0)]
    assert book.virtual_best("small") == pytest.approx((10 + 11) / 2)
    potentials = book.potentials()
    assert potentials["small"] == pytest.approx((10.5 - 10) / 10.5)
    assert potentials["large"] == pytest.approx(2.0 * (8 - 8) / 8)
    shares = book.shares(0.1)
    assert shares["small"] > shares["large"] and sum(shares.values()) == pytest.approx(1.0)


def test_a_minimised_task_ranks_by_fitness() -> None:
    book = SubproblemBook(SUBPROBLEMS, MINIMIZE, population=3)
    book.observe(1, cases(s1=5.0))
    book.observe(2, cases(s1=3.0))
    assert book.leaders("small")[0][0] == 2


class Run:
    def __init__(self, tmp_path: Path, config: DecompositionConfig,
                 families: dict[int, str] | None = None) -> None:
        self.store = Store.open(tmp_path / "run", create=True)
        self.recorder = Recorder(self.store, EventBus())
        self.children: list[DirectChild] = []
        self.hook = Decomposition(
            config, self.store, self.recorder, MAXIMIZE, task_root=tmp_path / "task",
            work_root=tmp_path / "work", record_child=self.record,
            families=lambda: families or {})

    def record(self, generation: int, child: DirectChild) -> int:
        with self.recorder.transaction():
            return self.recorder.add_candidate(NewCandidate(
                generation=generation, island=0, parent_id=child.parent_id,
                operator=child.operator, status=CandidateStatus.PENDING, language="python",
                source=child.source, notes=child.notes))

    def program(self, source: str, scores: dict[str, float]) -> int:
        with self.recorder.transaction():
            candidate_id = self.recorder.add_candidate(NewCandidate(
                generation=0, island=0, parent_id=None, operator="full",
                status=CandidateStatus.PENDING, language="python", source=source))
            self.recorder.add_evaluation(candidate_id, EvaluationResult(
                status="ok", combined_score=sum(scores.values()) / len(scores),
                extra={"cases": [{"case": k, "score": v} for k, v in scores.items()]}))
        self.store.candidates.update(candidate_id, status=CandidateStatus.CORRECT,
                                     score=sum(scores.values()) / len(scores))
        self.hook.observe(candidate_id)
        return candidate_id


def test_steered_proposals_work_on_a_leader_and_say_which_subproblem(tmp_path: Path) -> None:
    run = Run(tmp_path, DecompositionConfig(subproblems=SUBPROBLEMS, steer_share=1.0))
    small = run.program("a = 1\n", cases(s1=10, l1=1))
    large = run.program("b = 2\n", cases(s1=1, l1=10))
    rng = np.random.default_rng(0)
    seen: dict[str, Counter[int]] = {}
    for _ in range(60):
        steering = run.hook.steer(rng)
        note = run.hook.prompt_notes(rng)[0]
        seen.setdefault(steering.tags["subproblem"], Counter())[steering.restart_parent] += 1
        assert f"sub-problem '{steering.tags['subproblem']}'" in note
    # Each sub-problem's leader is its most frequent parent (rank-weighted population).
    assert {name: parents.most_common(1)[0][0] for name, parents in seen.items()} == {
        "small": small, "large": large}


def test_a_winning_strategy_is_offered_to_the_other_subproblem_once(tmp_path: Path) -> None:
    families = {1: "greedy", 2: "simulated annealing"}
    run = Run(tmp_path, DecompositionConfig(subproblems=SUBPROBLEMS, steer_share=1.0),
              families)
    run.program("greedy\n", cases(s1=10, l1=1))
    run.program("anneal\n", cases(s1=1, l1=10))
    rng = np.random.default_rng(1)
    inspired = [s for s in (run.hook.steer(rng) for _ in range(30)) if s.inspirations]
    transfers = run.store.events.of_type(StrategyTransfer)
    assert {(t.source, t.target, t.family) for t in transfers} == {
        ("small", "large", "greedy"), ("large", "small", "simulated annealing")}
    assert len(inspired) == 2  # once per family and target
    run.hook.restore()  # a resumed run does not offer them again
    assert all(not run.hook.steer(rng).inspirations for _ in range(20))


def test_the_tasks_combiner_runs_contained_and_its_program_is_a_child(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "combine.py").write_text(textwrap.dedent('''
        import os

        def combine(sources):
            assert not os.access("/", os.W_OK) or os.getuid() != 0  # contained
            return "# combined\\n" + "".join(sources[name] for name in sorted(sources))
    '''))
    run = Run(tmp_path, DecompositionConfig(subproblems=SUBPROBLEMS, combiner="combine.py",
                                            combine_every=2))
    a = run.program("a = 1\n", cases(s1=10, l1=1))
    b = run.program("b = 2\n", cases(s1=1, l1=10))
    slot = SlotContext(generation=3, allowance=10, children_evaluated=1, programs={},
                       rng=np.random.default_rng(0))
    assert asyncio.run(run.hook.take_slot(slot)) is None  # not yet: every 2 evaluations
    taken = asyncio.run(run.hook.take_slot(SlotContext(3, 10, 2, {}, slot.rng)))
    assert taken is not None and taken.child_id is not None
    child = run.store.candidates.get(taken.child_id)
    assert child.source == "# combined\nb = 2\na = 1\n"  # large's leader, then small's
    assert child.operator == "combine" and child.notes["combined"] == {"small": a, "large": b}
    (event,) = run.store.events.of_type(SubsolutionsCombined)
    assert event.method == "combiner" and sorted(event.sources) == [a, b]
    assert asyncio.run(run.hook.take_slot(SlotContext(3, 10, 4, {}, slot.rng))) is None  # done


def test_a_failing_combiner_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "combine.py").write_text("def combine(sources):\n    raise ValueError('nope')\n")
    run = Run(tmp_path, DecompositionConfig(subproblems=SUBPROBLEMS, combiner="combine.py",
                                            combine_every=1))
    run.program("a = 1\n", cases(s1=10, l1=1))
    run.program("b = 2\n", cases(s1=1, l1=10))
    slot = SlotContext(1, 10, 1, {}, np.random.default_rng(0))
    assert asyncio.run(run.hook.take_slot(slot)) is None
    (event,) = run.store.events.of_type(SubsolutionsCombined)
    assert "raised ValueError: nope" in event.error and event.child_id is None


def test_without_a_combiner_the_leaders_are_crossed_by_the_model(tmp_path: Path) -> None:
    run = Run(tmp_path, DecompositionConfig(subproblems=SUBPROBLEMS, combine_every=1,
                                            steer_share=0.0))
    a = run.program("a = 1\n", cases(s1=10, l1=1))
    b = run.program("b = 2\n", cases(s1=1, l1=10))
    rng = np.random.default_rng(0)
    assert asyncio.run(run.hook.take_slot(SlotContext(1, 10, 1, {}, rng))) is None
    steering = run.hook.steer(rng)
    assert steering.intent == "crossover" and {steering.restart_parent,
                                               *steering.inspirations} == {a, b}
    assert "Combine:" in run.hook.prompt_notes(rng)[0]
    assert run.hook.steer(rng) is None  # once


def test_one_subproblem_is_refused() -> None:
    with pytest.raises(ValueError, match="at least two"):
        DecompositionConfig(subproblems=SUBPROBLEMS[:1])
