"""Search phases (seed 004 §10.6, §10.9, §10.10): the budget split between exploration,
exploitation and polishing, adaptive transitions (stagnation moves on early, a breakthrough
extends the phase), stagnation recovery, and the steering each phase gives the proposals.
A real store and recorder; the run's progress is driven by hand."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cambrian.config.phases import PhasesConfig
from cambrian.core.bus import EventBus
from cambrian.core.events import PhaseChanged, PhaseExtended, StagnationRecovery
from cambrian.core.objective import MAXIMIZE
from cambrian.core.status import CandidateStatus
from cambrian.search.phases import PhaseController
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store


class Run:
    """A store whose best score and budget position a test sets."""

    def __init__(self, tmp_path: Path, config: PhasesConfig, niches: int | None = None) -> None:
        self.store = Store.open(tmp_path / "run", create=True)
        self.recorder = Recorder(self.store, EventBus())
        self.evaluated, self.at, self.niches = 0, 0.0, niches
        self.controller = PhaseController(
            config, self.store, self.recorder, MAXIMIZE, evaluated=lambda: self.evaluated,
            budget_position=lambda evaluated: self.at, niche_count=lambda: self.niches)
        asyncio.run(self.controller.prepare())

    def program(self, score: float, source: str = "x = 1\n") -> int:
        with self.recorder.transaction():
            return self.recorder.add_candidate(NewCandidate(
                generation=0, island=0, parent_id=None, operator="full",
                status=CandidateStatus.CORRECT, language="python",
                source=f"{source}# {score}\n"))

    def score(self, candidate_id: int, score: float) -> None:
        self.store.candidates.update(candidate_id, status=CandidateStatus.CORRECT, score=score)

    def step(self, evaluations: int = 1, at: float | None = None) -> None:
        self.evaluated += evaluations
        if at is not None:
            self.at = at
        self.controller.steer(None)

    def phases(self) -> list[str]:
        return [e.phase for e in self.store.events.of_type(PhaseChanged)]


def test_each_phase_owns_its_share_of_the_budget(tmp_path: Path) -> None:
    run = Run(tmp_path, PhasesConfig(enabled=True, stagnation=1000))
    run.score(run.program(1.0), 1.0)
    run.step(at=0.0)
    assert run.phases() == ["comprehension", "exploration"]
    run.step(at=0.44)
    assert run.controller.position.phase == "exploration"
    run.step(at=0.45)
    assert run.controller.position.phase == "exploitation"
    run.step(at=0.84)
    assert run.controller.position.phase == "exploitation"
    run.step(at=0.85)
    assert run.phases() == ["comprehension", "exploration", "exploitation", "polishing"]
    changed = run.store.events.of_type(PhaseChanged)
    assert "share of the budget is spent" in changed[-1].reason
    assert changed[-1].budget_position == pytest.approx(0.85)


def test_stagnation_moves_on_early_once_enough_strategies_exist(tmp_path: Path) -> None:
    config = PhasesConfig(enabled=True, stagnation=5, min_phase_share=0.2, min_strategies=3)
    run = Run(tmp_path, config, niches=2)
    run.score(run.program(1.0), 1.0)
    run.step(at=0.0)
    run.step(6, at=0.2)  # stagnant, a fifth of exploration spent, but two strategies only
    assert run.controller.position.phase == "exploration"
    run.niches = 3
    run.step(1, at=0.21)
    assert run.controller.position.phase == "exploitation"
    assert "no better program in" in run.store.events.of_type(PhaseChanged)[-1].reason


def test_a_breakthrough_extends_the_phase(tmp_path: Path) -> None:
    run = Run(tmp_path, PhasesConfig(enabled=True, stagnation=1000, breakthrough=0.05,
                                     extension=0.1))
    first = run.program(1.0)
    run.score(first, 1.0)
    run.step(at=0.0)
    better = run.program(1.2, "y = 2\n")
    run.score(better, 1.2)
    run.step(at=0.3)
    (extended,) = run.store.events.of_type(PhaseExtended)
    assert extended.phase == "exploration" and extended.until == pytest.approx(0.55)
    run.step(at=0.5)
    assert run.controller.position.phase == "exploration"  # 0.45 was its end before
    run.step(at=0.55)
    assert run.controller.position.phase == "exploitation"
    # The later phases keep their shares after it: exploitation now ends at 0.95.
    assert run.controller.phase_end("exploitation") == pytest.approx(0.95)


def test_a_stagnating_last_phase_recovers_in_turn(tmp_path: Path) -> None:
    config = PhasesConfig(enabled=True, stagnation=3, recovery_proposals=2)
    run = Run(tmp_path, config)
    for index, score in enumerate((1.0, 0.5, 0.9)):
        run.score(run.program(score, f"z = {index}\n" * (index + 1)), score)
    run.step(at=0.0)
    run.step(at=0.9)  # polishing
    assert run.controller.position.phase == "polishing"
    base = run.controller.steer(None)
    run.step(3)
    actions = [e.action for e in run.store.events.of_type(StagnationRecovery)]
    assert actions == ["raise_temperature"]
    hot = run.controller.steer(None)
    assert hot.temperature_scale == pytest.approx(base.temperature_scale * 1.3)
    run.step(3)
    switched = run.controller.steer(None)
    assert switched.intent_weights["strategy"] > base.intent_weights["strategy"]
    run.step(3)
    restart = [e for e in run.store.events.of_type(StagnationRecovery) if e.action == "restart"]
    assert restart and restart[0].restart_parent is not None
    # (the restart parent is handed to one proposal only)


def test_the_steering_follows_the_phase(tmp_path: Path) -> None:
    config = PhasesConfig(enabled=True, stagnation=1000,
                          models={"polishing": ["cheap"]})
    run = Run(tmp_path, config)
    run.score(run.program(1.0), 1.0)
    exploring = run.controller.steer(None)
    run.step(at=0.9)
    polishing = run.controller.steer(None)
    assert exploring.intent_temperatures and polishing.intent_temperatures
    assert exploring.intent_weights["strategy"] > polishing.intent_weights["strategy"]
    assert polishing.intent_weights["tuning"] > exploring.intent_weights["tuning"]
    assert polishing.temperature_scale < exploring.temperature_scale
    assert polishing.models == frozenset({"cheap"}) and not exploring.models


def test_the_position_survives_a_resume(tmp_path: Path) -> None:
    run = Run(tmp_path, PhasesConfig(enabled=True, stagnation=1000))
    run.score(run.program(1.0), 1.0)
    run.step(at=0.5)
    saved = run.controller.state()
    again = PhaseController(PhasesConfig(enabled=True), run.store, run.recorder, MAXIMIZE,
                            evaluated=lambda: 1, budget_position=lambda evaluated: 0.5)
    again.load_state(saved)
    asyncio.run(again.prepare())  # no second "comprehension" event
    assert again.position.phase == "exploitation"
    assert run.phases().count("comprehension") == 1


def test_budget_shares_must_add_up() -> None:
    with pytest.raises(ValueError, match="add up to 1"):
        PhasesConfig(budget_shares={"exploration": 0.5, "exploitation": 0.5, "polishing": 0.5})
