from __future__ import annotations

import math

import numpy as np
import pytest

from cambrian.config import LLMConfig, ModelConfig
from cambrian.llm.bandit import UCB1Bandit, reward_improvement
from cambrian.llm.ensemble import Ensemble


def test_reward_is_improvement_over_the_better_of_parent_and_initial():
    assert reward_improvement(5.0, parent=3.0, initial=4.0) == pytest.approx(1.0)
    assert reward_improvement(5.0, parent=4.5, initial=2.0) == pytest.approx(0.5)
    assert reward_improvement(3.0, parent=4.0, initial=1.0) == 0.0  # worse: clipped
    assert reward_improvement(None, parent=4.0, initial=1.0) == 0.0  # incorrect child
    assert reward_improvement(2.0, parent=None, initial=None) == 0.0


def test_rewards_are_normalised_by_the_largest_improvement():
    bandit = UCB1Bandit(["a", "b"])
    bandit.update("a", 2.0)
    bandit.update("b", 1.0)
    assert bandit.mean_reward("a") == pytest.approx(1.0)  # the largest maps to 1
    assert bandit.mean_reward("b") == pytest.approx((math.exp(0.5) - 1) / (math.e - 1))


def test_statistics_do_not_depend_on_the_score_scale():
    small, large = UCB1Bandit(["a", "b", "c"]), UCB1Bandit(["a", "b", "c"])
    for arm, improvement in [("a", 0.01), ("b", 0.0), ("a", 0.03), ("c", 0.02), ("b", 0.005)]:
        small.update(arm, improvement)
        large.update(arm, improvement * 1e6)
    assert small.ucb_scores() == pytest.approx(large.ucb_scores())


def test_unseen_arms_are_tried_first_then_the_best_is_exploited():
    bandit = UCB1Bandit(["a", "b", "c"], exploration=0.1)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(3):
        arm = bandit.select(rng)
        seen.add(arm)
        bandit.submitted(arm)
        bandit.update(arm, {"a": 0.0, "b": 1.0, "c": 0.1}[arm])
    assert seen == {"a", "b", "c"}
    assert bandit.select(rng) == "b"


def test_in_flight_pulls_count_as_visits():
    bandit = UCB1Bandit(["a", "b"])
    bandit.update("a", 1.0)
    bandit.stats["a"].submitted = 1
    bandit.update("b", 1.0)
    bandit.stats["b"].submitted = 1
    before = bandit.ucb_scores()["a"]
    bandit.submitted("a")  # a second pull of "a" is in flight: its bonus shrinks
    bandit.submitted("a")
    assert bandit.ucb_scores()["a"] < before
    assert bandit.select(np.random.default_rng(0)) == "b"


def test_allowed_restricts_the_choice():
    bandit = UCB1Bandit(["a", "b"])
    assert bandit.select(np.random.default_rng(0), allowed={"b"}) == "b"


def test_ensemble_state_survives_a_changed_model_list():
    two = LLMConfig(models=[ModelConfig(name="m1", temperatures=[0.5]),
                            ModelConfig(name="m2", temperatures=[0.5])])
    ensemble = Ensemble(two)
    ensemble.observe("m1@0.5", 1.0)
    ensemble.observe("m2@0.5", 0.0)
    saved = ensemble.state()
    changed = LLMConfig(models=[ModelConfig(name="m2", temperatures=[0.5]),
                                ModelConfig(name="m3", temperatures=[0.5])])
    restored = Ensemble(changed)
    restored.load_state(saved)
    assert set(restored.bandit.stats) == {"m2@0.5", "m3@0.5"}
    assert restored.bandit.stats["m2@0.5"].improvements == [0.0]
    assert restored.bandit.stats["m3@0.5"].improvements == []


def test_fixed_and_single_selection():
    config = LLMConfig(selection="fixed", models=[ModelConfig(name="m1", temperatures=[0.0, 1.0], weight=3),
                                                  ModelConfig(name="m2", temperatures=[0.5], weight=1)])
    ensemble = Ensemble(config)
    assert ensemble.bandit is None
    assert ensemble.probabilities() == pytest.approx({"m1@0": 0.375, "m1@1": 0.375, "m2@0.5": 0.25})
    single = Ensemble(config.model_copy(update={"selection": "single"}))
    assert [a.key for a in single.arms] == ["m1@0", "m1@1"]
