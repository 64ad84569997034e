"""The statistics a self-reflection reads: per intent, model, niche of the parent and phase, the
best score's trajectory and the commonest failures, from rows written through the recorder."""

from __future__ import annotations

from pathlib import Path

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import UnknownEvent
from cambrian.core.objective import MAXIMIZE, MINIMIZE
from cambrian.core.status import CandidateStatus
from cambrian.meta.reflection_stats import Tally, summarise
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate, NewContext
from cambrian.store.store import Store


def child(recorder: Recorder, parent: int | None, *, intent: str | None, model: str | None,
          score: float | None = None, status: str = "correct",
          notes: dict[str, object] | None = None) -> int:
    """A child as the loop leaves it: stored, evaluated (unless refused), its outcome set."""
    refused = status == "patch_failed"
    candidate = recorder.add_candidate(NewCandidate(
        generation=1, island=0, parent_id=parent, operator="diff",
        status=CandidateStatus.PATCH_FAILED if refused else CandidateStatus.PENDING,
        language="python", source=None if refused else f"VALUE = {score}", model=model,
        notes={**({"intent": intent} if intent else {}), **(notes or {})}),
        parents=[parent] if parent else [])
    if refused:
        return candidate
    result = EvaluationResult("ok" if status == "correct" else status, score)  # type: ignore[arg-type]
    recorder.add_evaluation(candidate, result)
    recorder.set_outcome(candidate, CandidateStatus.CORRECT if status == "correct"
                         else CandidateStatus.INCORRECT, score=score,
                         error="" if status == "correct" else "ran out of time")
    return candidate


def a_run(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "run", create=True)
    recorder = Recorder(store)
    child(recorder, None, intent=None, model=None, score=1.0)  # the initial program
    best = child(recorder, 1, intent="refinement", model="A", score=2.0)
    child(recorder, 1, intent="tuning", model="A", score=0.5)
    child(recorder, 1, intent="tuning", model="B", status="timeout")
    child(recorder, 1, intent="refinement", model="B", status="patch_failed",
          notes={"outcome": "reply_refused"})
    # Events of parts the run may have: a phase controller, a strategy tagger.
    recorder.emit(UnknownEvent(name="phase_changed", data={"phase": "exploit", "evaluated": 4}))
    child(recorder, best, intent="refinement", model="A", score=3.0)
    child(recorder, best, intent="tuning", model="A", score=2.0)
    recorder.emit(UnknownEvent(name="strategy_tagged", data={"candidate_id": 1,
                                                             "family": "greedy"}),
                  UnknownEvent(name="strategy_tagged", data={"candidate_id": best,
                                                             "family": "local search"}))
    recorder.add_context(NewContext(purpose="mutation", model="B", provider="openai",
                                    params={}, messages=[], error="HTTP 500"))
    return store


def test_the_summary_counts_every_group_and_the_trajectory(tmp_path: Path):
    store = a_run(tmp_path)
    summary = summarise(store, MAXIMIZE, evaluated=5, budget=20, window=2)
    assert summary.intents == (Tally("refinement", 3, 2, 2, 2), Tally("tuning", 3, 3, 2, 0))
    assert summary.models == (Tally("A", 4, 4, 4, 2), Tally("B", 2, 1, 0, 0, failed_calls=1))
    # By the parent's family: children of the initial program (greedy), of the best (local
    # search).
    assert summary.niches == (Tally("greedy", 4, 3, 2, 1), Tally("local search", 2, 2, 2, 1))
    assert summary.phases == (Tally("exploit", 2, 2, 2, 1),)  # the two made after the change
    t = summary.trajectory
    assert (t.initial, t.best, t.gain, t.stagnant) == (1.0, 3.0, 1.0, 1)
    assert dict(summary.failures) == {"time limit": 1, "reply refused": 1}

    text = summary.render()
    assert text.splitlines()[:2] == [
        "After 5 of 20 evaluations (higher score is better):",
        "best score 3 (initial 1); improved by 1 in the last 2 evaluations; no new best for "
        "1 evaluations."]
    assert "- refinement: 3 tried, 2 correct, 2 beat parent" in text
    assert "- B: 2 tried, 0 correct, 0 beat parent, 1 failed calls" in text
    assert "Strategy niches (of the parent):\n- greedy:" in text
    assert "Phases:\n- exploit: 2 tried" in text
    assert "Commonest failures:\n- reply refused: 1\n- time limit: 1" in text
    assert len(text) < 1200  # a few hundred tokens
    numbers = summary.as_dict()
    assert numbers["intents"]["tuning"] == {"tried": 3, "evaluated": 3, "correct": 2,
                                            "improved": 0, "failed_calls": 0}
    assert numbers["best"] == 3.0 and numbers["failures"]["time limit"] == 1
    store.close()


def test_a_run_without_niches_phases_or_a_gain_says_so(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    recorder = Recorder(store)
    child(recorder, None, intent=None, model=None, score=5.0)
    for _ in range(3):  # worse for a minimised score
        child(recorder, 1, intent="tuning", model="A", score=6.0)
    summary = summarise(store, MINIMIZE, evaluated=3, budget=10, window=2)
    assert summary.niches == () and summary.phases == () and summary.failures == ()
    assert summary.intents == (Tally("tuning", 3, 3, 3, 0),)
    text = summary.render()
    assert "(lower score is better)" in text
    assert "best score 5 (initial 5); no gain in the last 2 evaluations; no new best for 3" \
        in text
    # A window longer than the run so far is the run so far.
    longer = summarise(store, MINIMIZE, evaluated=3, budget=10, window=20).render()
    assert "no gain in the last 3 evaluations" in longer
    assert "Strategy niches" not in text and "Phases" not in text
    store.close()


def test_no_correct_program_yet(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    recorder = Recorder(store)
    child(recorder, None, intent=None, model=None, status="timeout")
    child(recorder, 1, intent=None, model="A", status="timeout")
    summary = summarise(store, MAXIMIZE, evaluated=1, budget=10, window=5)
    assert summary.trajectory.best is None and summary.intents == ()
    assert "no correct program yet." in summary.render()
    store.close()
