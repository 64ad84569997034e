"""The mutation-intent schedule: exploration early, exploitation late (seed 002 §10.6), weighted
by each intent's recent success with a floor (seed 002 §10.10)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from cambrian.config import ALL_MUTATION_INTENTS, ConfigError, MutationConfig, build_config
from cambrian.core.objective import MAXIMIZE, MINIMIZE
from cambrian.mutate.intents import INTENTS
from cambrian.mutate.prompts import TASK_INTENT
from cambrian.mutate.schedule import MutationSchedule, improved_on_parent
from cambrian.search.build import check_names
from cambrian.store.rows import CandidateRow

ALL_KINDS = ("diff", "full", "cross")


WITHOUT_STEP = [name for name in ALL_MUTATION_INTENTS if name != "improve_step"]


def schedule(generations: int = 100, kinds=ALL_KINDS, **config) -> MutationSchedule:
    """The recent-success schedule (the intent bandit off) over the intents without the
    improvement step, as these phase-share figures were written for."""
    config = {"intent_bandit": False, "types": WITHOUT_STEP, **config}
    return MutationSchedule(MutationConfig(**config), generations=generations, patch_kinds=kinds)


def test_config_names_exactly_the_known_intents():
    assert set(ALL_MUTATION_INTENTS) == set(INTENTS.names())
    assert {i.kind for i in INTENTS} == {"diff", "full", "cross"}
    assert INTENTS.get("crossover").instruction == TASK_INTENT["cross"]


def test_early_runs_explore_and_late_runs_exploit():
    sched = schedule()
    early, late = sched.weights(0.0), sched.weights(1.0)
    # No history: every success factor is equal, so the weights are the phase shares.
    assert early["strategy"] == pytest.approx(0.5 / 3)
    assert early["crossover"] == pytest.approx(0.5 / 3)
    assert early["tuning"] == pytest.approx(0.5 * 0.4)
    assert early["local_fix"] == pytest.approx(0.5 * 0.3)
    assert "improve_step" not in early
    assert "improve_step" in MutationConfig().types  # on by default, where a parent allows it
    with_step = schedule(types=list(ALL_MUTATION_INTENTS)).weights(0.0)
    assert with_step["tuning"] == pytest.approx(0.5 * 0.4 / 1.3)
    assert with_step["improve_step"] == pytest.approx(with_step["local_fix"])
    explore = ("strategy", "refactor", "crossover")
    assert sum(late[n] for n in explore) == pytest.approx(0.1)  # the explore_end floor
    assert late["tuning"] == pytest.approx(0.9 * 0.4)
    # Halfway: max(0.1, 0.5 * (1 - 0.5)) = 0.25 of the mass explores.
    assert sum(sched.weights(0.5)[n] for n in explore) == pytest.approx(0.25)
    assert sum(early.values()) == pytest.approx(1.0) and sum(late.values()) == pytest.approx(1.0)


def test_progress_is_evaluated_children_over_the_generation_budget():
    sched = schedule(generations=40)
    assert sched.progress(10) == pytest.approx(0.25)
    assert sched.progress(80) == 1.0
    assert schedule(generations=0).progress(0) == 1.0


def test_recent_success_shifts_weight_between_intents():
    sched = schedule()
    for _ in range(10):
        sched.record("tuning", True)
        sched.record("local_fix", False)
    # floor + (successes + 0.5 * 2) / (uses + 2)
    assert sched.success_factor("tuning") == pytest.approx(0.1 + 11 / 12)
    assert sched.success_factor("local_fix") == pytest.approx(0.1 + 1 / 12)
    assert sched.success_factor("refinement") == pytest.approx(0.1 + 0.5)  # no history yet
    weights = sched.weights(1.0)
    base_ratio = 0.4 / 0.3
    assert weights["tuning"] / weights["local_fix"] == pytest.approx(
        base_ratio * (0.1 + 11 / 12) / (0.1 + 1 / 12))
    assert weights["tuning"] > weights["refinement"] > weights["local_fix"]


def test_only_the_last_window_counts_and_the_floor_keeps_every_intent_alive():
    sched = schedule(window=5, floor=0.05)
    for _ in range(50):
        sched.record("strategy", False)
    assert sched.success_factor("strategy") == pytest.approx(0.05 + 1 / 7)
    for _ in range(5):
        sched.record("strategy", True)
    assert sched.success_factor("strategy") == pytest.approx(0.05 + 6 / 7)  # the failures aged out
    for name in INTENTS.names():
        for _ in range(50):
            sched.record(name, False)
    assert min(sched.weights(1.0).values()) > 0


def test_patch_kinds_and_inspirations_limit_the_intents():
    full_only = schedule(kinds=("full",))
    assert set(full_only.weights(0.0)) == {"strategy", "refactor"}
    assert full_only.weights(0.9)["strategy"] == pytest.approx(0.5)  # one phase gets all the mass
    no_cross = schedule().weights(0.0, has_inspirations=False)
    assert "crossover" not in no_cross and sum(no_cross.values()) == pytest.approx(1.0)
    cross_only = schedule(kinds=("cross",))
    assert cross_only.choose(np.random.default_rng(0), 0, has_inspirations=False) is None
    assert set(schedule(types=["tuning", "strategy"]).weights(0.0)) == {"tuning", "strategy"}


def test_a_parent_without_settings_gets_no_tuning_proposal():
    """"Tune the parameters only" on a program holding no numeric setting has nothing to work
    on: the intent is left out and the other exploit intents share its weight."""
    plain = schedule().weights(0.9, unusable={"tuning"})
    assert "tuning" not in plain and sum(plain.values()) == pytest.approx(1.0)
    assert plain["local_fix"] == pytest.approx(plain["refinement"])
    assert "tuning" in schedule().weights(0.9, unusable=())
    rng = np.random.default_rng(0)
    picks = {schedule().choose(rng, 90, True, unusable={"tuning"}).name for _ in range(200)}
    assert "tuning" not in picks and {"local_fix", "refinement"} <= picks


def test_choices_follow_the_weights():
    sched = schedule(generations=10)
    rng = np.random.default_rng(7)
    early = Counter(sched.choose(rng, 0, True).name for _ in range(4000))
    late = Counter(sched.choose(rng, 10, True).name for _ in range(4000))
    explore = ("strategy", "refactor", "crossover")
    assert sum(early[n] for n in explore) / 4000 == pytest.approx(0.5, abs=0.03)
    assert sum(late[n] for n in explore) / 4000 == pytest.approx(0.1, abs=0.02)


def _row(status: str, score: float | None) -> CandidateRow:
    return CandidateRow(id=5, generation=1, island=0, parent_id=2, operator="diff", status=status,
                        source="x", source_hash="h", description="", model=None, score=score,
                        error="", notes={})


def test_improvement_means_a_correct_child_beating_its_parent():
    assert improved_on_parent(_row("correct", 3.0), 2.0, objective=MAXIMIZE)
    assert not improved_on_parent(_row("correct", 2.0), 2.0, objective=MAXIMIZE)
    assert improved_on_parent(_row("correct", 1.0), 2.0, objective=MINIMIZE)
    assert not improved_on_parent(_row("incorrect", None), 2.0, objective=MAXIMIZE)
    assert improved_on_parent(_row("correct", 0.0), None, objective=MAXIMIZE)  # a failing parent


def test_config_is_validated():
    assert build_config([]).mutation.schedule == "linear"
    # An unquoted `off` in YAML (config.yaml or --set mutation.schedule=off) arrives as False.
    assert build_config([], ["mutation.schedule=off"]).mutation.schedule == "off"
    with pytest.raises(ConfigError, match="did you mean 'schedule'"):
        build_config([{"mutation": {"schedul": "off"}}])
    # Intents are registered objects: an unknown name fails before the run, with the nearest.
    with pytest.raises(ConfigError, match="mutation.types: unknown mutation intent 'tunning'; "
                                          "did you mean 'tuning'"):
        check_names(build_config([{"mutation": {"types": ["tunning"]}}]))
    with pytest.raises(ConfigError, match="at least one intent"):
        build_config([{"mutation": {"types": []}}])
    with pytest.raises(ConfigError, match="explore_end"):
        build_config([{"mutation": {"explore_start": 0.1, "explore_end": 0.3}}])
