from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from algorithm_helpers import build_selector, feed, record, run_algorithm, scripted_gateway
from support.scripted_llm import ScriptedLLM, current_value, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.core.objective import MAXIMIZE
from cambrian.search.algorithms.adaevolve import (
    EXPLORE_GUIDANCE,
    REFINE_GUIDANCE,
    AdaEvolveHooks,
    parse_direction,
)
from cambrian.search.algorithms.adaptive import IslandProgress, intensity, ucb_island
from cambrian.search.hooks import HookServices


def test_improvement_signal_grows_on_gains_and_decays_while_stuck():
    sel = build_selector("adaevolve")  # decay 0.9
    feed(sel, record(1, 0.0))
    island = sel.islands[0]
    feed(sel, record(2, 10.0))  # delta = 10 / range 10 = 1
    assert island.g == pytest.approx(0.1)
    high = sel.island_intensity(0)
    feed(sel, record(3, 5.0))  # no gain: G only decays
    assert island.g == pytest.approx(0.09)
    feed(sel, record(4, 12.5))  # delta = 2.5 / range 12.5 = 0.2
    assert island.g == pytest.approx(0.9 * 0.09 + 0.1 * 0.04)
    feed(sel, record(5, None), record(6, None))  # failures count as evaluations without gain
    assert island.g == pytest.approx(0.81 * 0.085)
    assert island.since_improvement == 2
    # High G -> low intensity (exploit); as G fades, intensity climbs back towards the maximum.
    assert intensity(0.0, 0.15, 0.5) == pytest.approx(0.5, abs=1e-3)
    assert sel.island_intensity(0) > high > intensity(1.0, 0.15, 0.5)


def decisions(scale: float, offset: float) -> tuple:
    sel = build_selector("adaevolve", {"stagnation_window": 2, "spawn_cooldown": 0,
                                       "max_islands": 4, "min_visits": 1}, num_islands=2)
    history = [(1, 3.0, 0), (2, 4.0, 0), (3, 3.5, 1), (4, 4.5, 1), (5, 4.2, 0), (6, 9.0, 1),
               (7, 4.1, 0), (8, 8.0, 1), (9, 1.0, 0), (10, 8.5, 1), (11, 7.0, 2), (12, 2.0, 2)]
    events = feed(sel, *(record(pid, f * scale + offset, island=island)
                         for pid, f, island in history))
    samples = []
    for seed in range(25):
        sample = sel.sample(np.random.default_rng(seed))
        samples.append((sample.parent_id, sample.island, sample.guidance, sample.inspiration_ids))
    signals = [(round(i.g, 9), round(i.reward, 9), i.since_improvement) for i in sel.islands]
    return [(e.kind, e.payload()) for e in events], samples, signals


def test_decisions_do_not_depend_on_the_score_scale():
    baseline = decisions(1.0, 0.0)
    assert baseline[0], "the history should spawn at least one island"
    assert decisions(1000.0, 0.0) == baseline
    assert decisions(0.001, -50.0) == baseline


def test_ucb_tries_fresh_islands_first_then_balances_reward_and_visits():
    def island(visits, reward, mass):
        return IslandProgress(visits=visits, reward=reward, mass=mass)

    assert ucb_island([island(3, 0.0, 2.0), island(1, 0.0, 1.0), island(0, 0, 0)], 1.41, 2) == 2
    assert ucb_island([island(5, 0.0, 4.0), island(5, 0.5, 4.0)], 1.41, 2) == 1
    # A rarely visited island wins on its exploration bonus despite a lower reward.
    assert ucb_island([island(50, 2.0, 9.0), island(2, 0.0, 1.7)], 1.41, 2) == 1
    assert ucb_island([island(50, 2.0, 9.0), island(2, 0.0, 1.7)], 0.0, 2) == 0


def test_sampling_follows_the_ucb_island_and_its_intensity():
    sel = build_selector("adaevolve", {"min_visits": 1}, num_islands=2)
    feed(sel, record(1, 1.0), record(2, 2.0, island=0), record(3, 0.5, island=1),
         record(4, 3.0, island=0), record(5, 0.7, island=1))
    rng = np.random.default_rng(0)
    samples = [sel.sample(rng) for _ in range(2000)]
    assert {s.island for s in samples} == {0}  # only island 0 has been improving
    guidance = [s.guidance for s in samples]
    explore_share = guidance.count(EXPLORE_GUIDANCE) / len(samples)
    assert explore_share == pytest.approx(sel.island_intensity(0), abs=0.035)
    assert all(s.parent_id == 4 for s in samples if s.guidance == REFINE_GUIDANCE)


def test_a_new_island_is_spawned_when_every_island_stagnates():
    sel = build_selector("adaevolve", {"stagnation_window": 3, "spawn_cooldown": 0,
                                       "max_islands": 3, "min_visits": 1}, num_islands=2)
    feed(sel, record(1, 1.0), record(2, 5.0, island=0), record(3, 4.0, island=1))
    stuck = [record(pid, 0.5, island=pid % 2) for pid in range(4, 9)]
    assert feed(sel, *stuck) == []  # island 1 has only two evaluations without gain
    events = feed(sel, record(9, 0.5, island=1))
    assert [(e.kind, e.payload()["island"], e.payload()["seed_id"]) for e in events] == \
        [("island_spawned", 2, 2)]
    assert sel.islands[2].members == [2] and sel.islands[2].best == 5.0
    assert sel.sample(np.random.default_rng(0)).island == 2  # fresh islands are tried first
    for pid in range(10, 13):
        assert feed(sel, record(pid, 0.1, island=2)) == []  # max_islands reached
    assert len(sel.islands) == 3


def test_diverse_spawn_seed_differs_most_in_size_among_the_better_half():
    sel = build_selector("adaevolve", {"stagnation_window": 4, "spawn_cooldown": 0,
                                       "spawn_seed": "diverse"})
    feed(sel, record(1, 1.0, code_length=100), record(2, 9.0, code_length=100),
         record(3, 8.0, code_length=900), record(4, 0.0, code_length=5000),
         record(5, 7.0, code_length=120))
    events = feed(sel, record(6, 0.1))  # the 4th evaluation in a row without a gain
    assert [(e.kind, e.payload()["seed_id"]) for e in events] == [("island_spawned", 3)]


def test_breakthrough_guidance_is_requested_on_stall_and_attached_to_proposals():
    sel = build_selector("adaevolve", {"breakthrough_window": 3, "guidance_uses": 2})
    feed(sel, record(1, 1.0), record(2, 4.0), record(3, 2.0), record(4, 3.0))
    prompts: list[str] = []

    async def ask(purpose, prompt, **kwargs):
        prompts.append(prompt)
        return "Thinking...\nDIRECTION: Replace the loop with a closed-form formula."

    store = SimpleNamespace(candidates=SimpleNamespace(
        get=lambda pid: SimpleNamespace(source=f"# program {pid}\nX = 1\n")))
    services = HookServices(store=store, objective=MAXIMIZE, problem="Make X large.",
                            gateway=scripted_gateway(ask), model_label="scripted",
                            record_child=lambda generation, child: None)
    hooks = AdaEvolveHooks(sel, services, sel.context.options)
    assert not hooks.due(3)
    feed(sel, record(5, 0.5))
    assert hooks.due(4)
    events = asyncio.run(hooks.step(4))
    assert "Paradigm breakthrough request" in prompts[0] and "Make X large." in prompts[0]
    assert "# program 2" in prompts[0]  # the best program is shown
    direction = "Replace the loop with a closed-form formula."
    assert [(e.kind, e.payload()["guidance"]) for e in events] == [("guidance", direction)]
    assert hooks.state()["history"] == [{"evaluated": 4, "best_id": 2, "guidance": direction}]
    assert not hooks.due(4)
    rng = np.random.default_rng(0)
    first, second, third = (sel.sample(rng) for _ in range(3))
    assert direction in first.guidance and direction in second.guidance
    assert first.parent_id == second.parent_id == 2  # from the global best
    assert direction not in third.guidance
    feed(sel, record(6, 0.2), record(7, 0.3))
    assert not hooks.due(6)  # wait a full window after the last request
    feed(sel, record(8, 0.4))
    assert hooks.due(7)
    fresh = AdaEvolveHooks(sel, services, sel.context.options)
    fresh.load_state(hooks.state())
    assert fresh.history == hooks.history and fresh.last_request == 4


def test_parse_direction_accepts_replies_without_the_prefix():
    assert parse_direction("direction: try  greedy\nthen refine.\n\nExtra") == "try greedy then refine."
    assert parse_direction("Use a heap.\n\nMore words") == "Use a heap."
    assert parse_direction("") == ""


def stalls_until_guided(messages, index):
    """Improves at first, then only proposes worse programs until a new direction arrives."""
    prompt = messages[-1]["content"]
    if "Paradigm breakthrough request" in prompt:
        return "DIRECTION: Jump VALUE by hundreds instead of creeping upwards."
    if "Jump VALUE by hundreds" in prompt:
        return f"Big jump\n```python\nVALUE = {current_value(messages) + 100 + index}\n```\n"
    if index < 3:
        return incrementing(messages, index)
    return f"Try something\n```python\nVALUE = {-index}\n```\n"


def test_adaevolve_run_gets_guidance_on_stall_and_resumes(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(stalls_until_guided) as llm:
        run = run_algorithm(
            task, tmp_path / "run", llm, "adaevolve", 12, "database.num_islands=2",
            "search.options.breakthrough_window=3", "search.options.guidance_uses=2",
            "search.options.stagnation_window=2", "search.options.spawn_cooldown=2",
            "search.options.max_islands=3",
            "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]",
        )
    assert run.summary.evaluations == 12
    guidance = stored_events(run.store, "guidance")
    assert guidance and "Jump VALUE by hundreds" in guidance[0]["payload"]["guidance"]
    assert run.live["hooks"]["history"][0]["guidance"] == guidance[0]["payload"]["guidance"]
    assert sql(run.store, "SELECT COUNT(*) FROM contexts WHERE purpose='paradigm'").fetchone()[0] >= 1
    guided = [m for m in run.requests if "New high-level direction" in m[-1]["content"]]
    assert guided
    assert run.summary.best_score >= 100  # the direction broke the plateau
    assert stored_events(run.store, "island_spawned")
    assert len(run.live["describe"]["islands"]) == 3
    assert re.search(r"VALUE = \d{3}", (tmp_path / "run" / "best" / "program.py").read_text())
    assert run.resumed == run.live
