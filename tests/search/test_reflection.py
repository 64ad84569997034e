"""Self-reflection: the reply parser, the schedule and its back-off, a run whose reflections
reach `cambrian status`, the UI's data, the report and the later mutation prompts, a resume
that does not reflect again, and the embedded model writing a parsable reflection."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import resume, start
from cambrian.config import LLMConfig, ModelConfig
from cambrian.config.reflection import ReflectionConfig
from cambrian.core.events import Recommendation, Reflection
from cambrian.core.hooks import StepFailed
from cambrian.core.objective import MAXIMIZE
from cambrian.llm.factory import build_providers
from cambrian.llm.gateway import LLMGateway
from cambrian.meta.reflection import SelfReflection, parse_reflection, reflection_grammar
from cambrian.search.side_work import PeriodicJob, SideWork
from cambrian.store.recorder import Recorder
from cambrian.store.reflections import latest_reflection
from cambrian.store.store import Store
from cambrian.trace.loading import load_trace
from cambrian.trace.report import render_report
from cambrian.ui.data import reflection_items

INTENTS = ["tuning", "local_fix", "refinement", "strategy", "refactor", "crossover"]
ASKED = "Recommend how the search should go on"  # in every reflection prompt
REPLY = ("1. FAVOUR refinement: it beat the parent most often\n"
         "2. TRY raising VALUE in steps of ten\n"
         "3. AVOID exceeding the limit: those programs fail\n")


# --------------------------------------------------------------------------- the reply parser


def test_a_good_reply_gives_each_recommendation_and_the_intents_it_names():
    found = parse_reflection(REPLY + "4. AVOID local fix of loops: slower programs\n",
                             INTENTS, limit=5)
    assert found == [
        Recommendation("favour", "refinement: it beat the parent most often", "refinement"),
        Recommendation("try", "raising VALUE in steps of ten"),
        Recommendation("avoid", "exceeding the limit: those programs fail"),
        Recommendation("avoid", "local fix of loops: slower programs", "local_fix"),
    ]
    reflection = Reflection(evaluated=6, summary="", recommendations=[
        {"action": r.action, "text": r.text, "intent": r.intent} for r in found])
    assert reflection.intent_weights() == {"refinement": 2.0, "local_fix": 0.5}
    twice = parse_reflection(REPLY + "4. TRY refinement of the loop\n5. AVOID tuning\n"
                             "6. FAVOUR tuning: sometimes\n", INTENTS, limit=6)
    weights = Reflection(evaluated=6, summary="", recommendations=[
        {"action": r.action, "text": r.text, "intent": r.intent} for r in twice]).intent_weights()
    assert weights == {"refinement": 2.0, "tuning": 1.0}  # however often; both cancel
    # The prompt notes are what a program's author can act on, not the schedule's weights.
    assert reflection.prompt_notes() == ["Run review: try raising VALUE in steps of ten",
                                         "Run review: avoid exceeding the limit: those "
                                         "programs fail"]


def test_a_partial_reply_keeps_only_its_well_formed_lines():
    text = ("Here is my analysis of the run.\n"
            "Try harder next time.\n"  # prose, not a recommendation
            "- favour tuning: constants matter\n"
            "**TRY** a lookup table\n"
            "3. TRY <a concrete change to the program>\n"  # the prompt's format line, copied
            "4. TRY\n"  # nothing to try
            "5. TRY a lookup table\n"  # a repeat
            "6) STOP rewriting everything: rewrites fail\n"
            "7. FAVOUR speed\n"
            "8. TRY strategy: a new approach\n")  # a TRY naming an intent favours it
    found = parse_reflection(text, INTENTS, limit=3)
    assert found == [Recommendation("favour", "tuning: constants matter", "tuning"),
                     Recommendation("try", "a lookup table"),
                     Recommendation("avoid", "rewriting everything: rewrites fail")]
    assert parse_reflection(text, [], limit=9)[0].intent is None  # no schedule, no intents
    assert parse_reflection(text, INTENTS, limit=9)[-2:] == [
        Recommendation("favour", "speed"),
        Recommendation("favour", "strategy: a new approach", "strategy")]


@pytest.mark.parametrize("garbage", [
    "", "The run is going well; keep going.",
    "```python\nVALUE = 12\n```", "RECOMMENDATIONS:\n1. raise VALUE\n",
])
def test_a_reply_without_recommendations_gives_none(garbage: str):
    assert parse_reflection(garbage, INTENTS, limit=4) == []


def test_the_grammar_offers_favour_only_with_intents():
    assert '"FAVOUR " intent' in reflection_grammar(INTENTS, 4)
    assert 'intent ::= "tuning" | "local_fix"' in reflection_grammar(INTENTS, 4)
    assert "FAVOUR" not in reflection_grammar([], 4)
    assert reflection_grammar([], 3).startswith("root ::= rec{1,3}")


# --------------------------------------------------------------------------- schedule, back-off


def reviewer(store: Store, llm: ScriptedLLM, **config: object) -> SelfReflection:
    llm_config = LLMConfig(models=[ModelConfig(**llm.model_config(name="reviewer"))])
    llm_config.retries.max_attempts = 1
    recorder = Recorder(store)
    gateway = LLMGateway(llm_config.models, build_providers(llm_config), recorder)
    return SelfReflection(ReflectionConfig(**{"enabled": True, **config}), gateway, recorder,
                          "reviewer", MAXIMIZE, budget=20, intents=INTENTS)


def test_due_every_interval_and_backing_off_after_an_unusable_reply(tmp_path: Path):
    replies = iter(["I would keep going.", REPLY, REPLY])
    store = Store.open(tmp_path / "run", create=True)
    with ScriptedLLM(lambda messages, index: next(replies)) as llm:
        hook = reviewer(store, llm, interval=3)
        starts: list[int] = []
        failures: list[tuple[int, int | None, str]] = []

        async def step(evaluated: int) -> None:
            starts.append(evaluated)
            await hook.step(evaluated)

        job = PeriodicJob(hook.name, hook.due, step, hook.blocks_proposals)
        work = SideWork([job], on_failure=lambda j, failure, n: failures.append(
            (n, j.retry_at, failure.reason)))

        async def drive() -> None:
            for evaluated in range(1, 11):
                for task in work.launch_due(evaluated):
                    await task

        asyncio.run(drive())
    # Due at 3, whose reply held nothing: tried again at 5 (back-off 2), then every 3.
    assert starts == [3, 5, 8]
    assert failures == [(3, 5, "the reply held no FAVOUR, AVOID or TRY line")]
    assert [e.evaluated for e in store.events.of_type(Reflection)] == [5, 8]
    assert store.contexts.count("reflection") == 3
    # The second reflection was shown the first one's recommendations.
    assert "## Your previous recommendations (after 5 evaluations)\n1. FAVOUR refinement" \
        in llm.requests[2][-1]["content"]
    store.close()


def test_an_unusable_reply_stores_no_reflection(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    with ScriptedLLM(lambda messages, index: "Looks fine to me.") as llm:
        hook = reviewer(store, llm)
        with pytest.raises(StepFailed, match="no FAVOUR, AVOID or TRY"):
            asyncio.run(hook.step(20))
    assert latest_reflection(store) is None and hook.prompt_notes(np.random.default_rng()) == ()
    assert store.contexts.count("reflection") == 1  # the call is in the ledger all the same
    store.close()


# --------------------------------------------------------------------------- runs


def reflecting(messages: list[dict[str, str]], index: int) -> str:
    return REPLY if ASKED in messages[-1]["content"] else incrementing(messages, index)


def settings(llm: ScriptedLLM, generations: int, interval: int) -> list[str]:
    return ["llm.models=[" + json.dumps(llm.model_config()) + "]",
            f"evolution.generations={generations}", "novelty.enabled=false",
            "meta.enabled=false", "reflection.enabled=true",
            f"reflection.interval={interval}", "reflection.per_prompt=2"]


def run_to_end(evolution) -> None:  # type: ignore[no-untyped-def]
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def mutation_prompts(requests: list[list[dict[str, str]]]) -> list[str]:
    return [m[-1]["content"] for m in requests if ASKED not in m[-1]["content"]]


def test_a_run_reflects_shows_it_and_later_prompts_carry_it(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(reflecting) as llm:
        run_to_end(start(task, run_dir=tmp_path / "run", overrides=settings(llm, 8, 3)))
        requests = list(llm.requests)

    asked = [i for i, m in enumerate(requests) if ASKED in m[-1]["content"]]
    assert asked, "no reflection was asked for"
    prompt = requests[asked[0]][-1]["content"]
    # The run's statistics: a few hundred tokens, intents and models among them.
    assert "## The run so far\nAfter " in prompt and "Mutation intents:\n- " in prompt
    assert "Models:\n- scripted: " in prompt and "FAVOUR <intent>" in prompt
    assert len(prompt) < 2500
    # Every mutation prompt after the first one carrying the ideas carries them (the one in
    # flight while the reflection was asked for was built without).
    later = mutation_prompts(requests[asked[0] + 1:])
    carrying = ["Run review: try raising VALUE in steps of ten" in p for p in later]
    assert True in carrying and all(carrying[carrying.index(True):])
    assert all("Run review: favour" not in p for p in later)  # the schedule's, not the model's

    with Store.open(tmp_path / "run") as store:
        events = stored_events(store, "reflection")
        assert len(events) == len(asked) == store.contexts.count("reflection")
        assert events[0]["payload"]["evaluated"] in (3, 4)
        latest = latest_reflection(store)
        assert latest is not None and latest.intent_weights() == {"refinement": 2.0}
        assert latest.statistics["intents"] and latest.statistics["models"]["scripted"]["tried"]
        assert reflection_items(store)[-1]["recommendations"][1] == {
            "action": "try", "text": "raising VALUE in steps of ten", "intent": None}

    printed = subprocess.run(
        [sys.executable, "-m", "cambrian.cli", "status", str(tmp_path / "run")],
        capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"}).stdout
    assert f"latest self-reflection: after {latest.evaluated} evaluations" in printed
    assert "favour refinement: it beat the parent most often" in printed
    assert "refinement ×2" in printed and "try raising VALUE in steps of ten" in printed

    report = render_report(load_trace(tmp_path / "run"))
    assert '<section id="reflections"><h2>Self-reflections</h2>' in report
    assert "exceeding the limit: those programs fail" in report


def test_a_resumed_run_does_not_reflect_again_and_keeps_its_ideas(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(reflecting) as llm:
        run_to_end(start(task, run_dir=tmp_path / "run", overrides=settings(llm, 6, 4)))
        first = len(llm.requests)
        run_to_end(resume(tmp_path / "run", overrides=settings(llm, 7, 4)))
        requests = list(llm.requests)

    asked = [i for i, m in enumerate(requests) if ASKED in m[-1]["content"]]
    assert len(asked) == 1 and asked[0] < first  # in the first session only
    resumed = mutation_prompts(requests[first:])
    assert resumed and all("Run review: try raising VALUE in steps of ten" in p
                           for p in resumed)
    with Store.open(tmp_path / "run") as store:
        assert len(store.events.of_type(Reflection)) == 1
        assert sql(store, "SELECT COUNT(*) FROM contexts WHERE purpose='reflection'"
                   ).fetchone()[0] == 1


@pytest.mark.local_llm
@pytest.mark.timeout(1800)  # minutes on a loaded 2-core machine
def test_the_embedded_model_writes_a_parsable_reflection(tmp_path: Path):
    """A real short run (scripted proposals), then the embedded 0.5B reads its statistics."""
    task = write_counter_task(tmp_path / "task", limit=20)
    with ScriptedLLM(incrementing) as llm:
        run_to_end(start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=6",
            "novelty.enabled=false", "meta.enabled=false"]))
    local = LLMConfig(models=[ModelConfig(provider="local",
                                          model="qwen2.5-coder-0.5b-instruct")])
    with Store.open(tmp_path / "run") as store:
        recorder = Recorder(store)
        gateway = LLMGateway(local.models, build_providers(local), recorder)
        hook = SelfReflection(ReflectionConfig(enabled=True, max_tokens=100), gateway,
                              recorder, gateway.label(None), MAXIMIZE, budget=20,
                              intents=INTENTS, problem="Raise VALUE as far as the limit allows.")
        reflection = asyncio.run(hook.reflect(6))
        assert reflection is not None, hook.last_problem
        items = reflection.items()
        assert 1 <= len(items) <= 4 and all(len(item.text) >= 3 for item in items)
        assert {item.action for item in items} <= {"favour", "avoid", "try"}
        assert all(item.intent in INTENTS for item in items if item.intent)
        assert "Mutation intents:\n- " in reflection.summary
        assert latest_reflection(store) == reflection
        call = store.contexts.get(reflection.context_id)  # type: ignore[arg-type]
        assert call.purpose == "reflection" and call.response_text
        print(call.response_text)


def test_the_latest_reflection_weighs_the_schedule_through_steer(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    with ScriptedLLM(lambda messages, index: "1. FAVOUR refinement: best\n2. AVOID strategy: "
                     "fails\n") as llm:
        hook = reviewer(store, llm)
        assert hook.steer(np.random.default_rng(0)) is None  # nothing reflected yet
        asyncio.run(hook.step(20))
    steering = hook.steer(np.random.default_rng(0))
    assert steering is not None
    assert steering.intent_weights == {"refinement": 2.0, "strategy": 0.5}
    store.close()
