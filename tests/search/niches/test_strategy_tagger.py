"""The strategy tagger on a real store and gateway with the scripted LLM server: a small prompt,
one stored tag per program (best first), a new family confirmed by the model, an unusable reply
that fails the step and not the run, and the cheapest model chosen by default."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM

from cambrian.config import LLMConfig, ModelConfig
from cambrian.config.niches import NichesConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.hooks import StepFailed
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.llm.cheapest import cheapest_label
from cambrian.llm.factory import build_providers
from cambrian.llm.gateway import LLMGateway
from cambrian.meta.strategy_prompts import (
    CONFIRM_QUESTION,
    TAG_QUESTION,
    TagReplyError,
    code_excerpt,
    parse_tag_reply,
    tag_messages,
)
from cambrian.meta.strategy_tagger import PURPOSE, StrategyTagger
from cambrian.meta.strategy_tags import StrategyTagged, TagBook
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store

PROGRAM = """import math

# EVOLVE-BLOCK-START
def solve(items):
    # pick the largest item that still fits
    return sorted(items, reverse=True)
# EVOLVE-BLOCK-END


def run():
    return solve([3, 1, 2])
"""


def test_parse_tag_reply_forgives_format_and_refuses_no_family():
    assert parse_tag_reply("FAMILY: greedy | IDEA: largest first") == \
        parse_tag_reply("Sure!\n**Family**: greedy; key idea = largest first\n")
    parsed = parse_tag_reply("family: Simulated annealing")
    assert parsed.family == "Simulated annealing" and parsed.key_idea == ""
    for bad in ("I think it is greedy.", "FAMILY:  | IDEA: x", "FAMILY: " + "x" * 70):
        with pytest.raises(TagReplyError):
            parse_tag_reply(bad)


def test_the_excerpt_is_the_evolve_block_cut_to_max_lines():
    assert code_excerpt(PROGRAM, 10) == ("def solve(items):\n    # pick the largest item that "
                                         "still fits\n    return sorted(items, reverse=True)")
    assert code_excerpt(PROGRAM, 2).endswith("... (1 more lines)")
    assert code_excerpt("a = 1\n\nb = 2\n", 5) == "a = 1\nb = 2"  # no markers: the whole file


def test_a_small_model_gets_worked_examples_and_no_list_a_remote_one_the_list():
    families = ["greedy", "local search", "other"]
    [listed] = tag_messages("x = 1", families, "python")
    assert TAG_QUESTION in listed.content and "greedy, local search, other" in listed.content
    shown = tag_messages("x = 1", families, "python", examples=True)
    assert [m.role for m in shown] == ["user", "assistant"] * 4 + ["user"]
    assert "greedy, local search" not in shown[-1].content and "x = 1" in shown[-1].content
    assert all(parse_tag_reply(m.content).family for m in shown if m.role == "assistant")


def test_the_cheapest_model_is_the_lowest_known_price_else_local_else_first():
    cheap = ModelConfig(name="cheap", provider="openai", model="x", price_input_per_mtok=0.1,
                        price_output_per_mtok=0.4)
    dear = ModelConfig(name="dear", provider="openai", model="y", price_input_per_mtok=3.0,
                       price_output_per_mtok=15.0)
    local = ModelConfig(name="small", provider="local", model="qwen2.5-coder-0.5b-instruct")
    unknown = ModelConfig(name="mystery", provider="openai", model="no-such-model-zz")
    assert cheapest_label([dear, local, cheap]) == "cheap"
    assert cheapest_label([unknown, local]) == "small"
    assert cheapest_label([unknown, ModelConfig(name="other", provider="openai",
                                                model="no-such-model-yy")]) == "mystery"
    assert cheapest_label([dear, ModelConfig(name="known", provider="openai",
                                             model="gpt-4o-mini")]) == "known"


def _store(tmp_path: Path, scores: dict[int, float | None]) -> Store:
    store = Store.open(tmp_path / "run", create=True)
    store.runs.create(run_id="r1", task_name="t", task_dir="/t", direction="maximize",
                      language="python", config={}, seed=0, code_version="test")
    for pid, score in scores.items():
        cid = store.candidates.add(NewCandidate(
            generation=pid, island=0, parent_id=None, operator="init",
            status=CandidateStatus.PENDING, language="python",
            source=PROGRAM.replace("[3, 1, 2]", f"[{pid}]")))
        store.evaluations.add(cid, EvaluationResult(status="ok", combined_score=score))
        store.candidates.update(cid, status=CandidateStatus.CORRECT if score is not None
                                else CandidateStatus.INCORRECT, score=score)
    return store


def _tagger(llm: ScriptedLLM, store: Store, **settings) -> StrategyTagger:
    config = LLMConfig(models=[ModelConfig(**llm.model_config(name="tagger"))])
    recorder = Recorder(store)
    gateway = LLMGateway(config.models, build_providers(config), recorder)
    return StrategyTagger(NichesConfig(**settings), gateway, recorder, "tagger",
                          Objective.of("maximize"), TagBook.from_store(store))


def test_tags_are_stored_best_first_and_a_new_family_the_model_repeats_joins(tmp_path: Path):
    store = _store(tmp_path, {1: 1.0, 2: 5.0, 3: None, 4: 3.0})

    def reply(messages, index):
        prompt = messages[0]["content"]
        assert TAG_QUESTION in prompt and "run()" not in prompt  # the block only
        if CONFIRM_QUESTION in messages[-1]["content"]:
            return "FAMILY: sweep line | IDEA: sweep the items once"
        return ["FAMILY: Greedy | IDEA: largest first", "FAMILY: sweep-line | IDEA: a sweep",
                "FAMILY: greedy heuristic | IDEA: sort then take"][min(index, 2)]

    with ScriptedLLM(reply) as llm:
        tagger = _tagger(llm, store, per_step=2)
        assert tagger.untagged() == [2, 4, 1] and tagger.due(0)
        asyncio.run(tagger.step(0))  # programs 2 and 4 (best first); 4's family is new
        asyncio.run(tagger.step(1))  # program 1
        assert not tagger.due(2)
    tags = {e.candidate_id: e for e in store.events.of_type(StrategyTagged)}
    assert sorted(tags) == [1, 2, 4]
    assert (tags[2].family, tags[2].key_idea, tags[2].raw_family) == ("greedy", "largest first",
                                                                       "Greedy")
    assert tags[4].family == "sweep line" and tags[4].insisted
    assert tags[4].key_idea == "sweep the items once"
    assert tags[1].family == "greedy"
    calls = store.contexts.count_by_model(PURPOSE)
    assert calls == {"tagger": 4}  # three tags, one confirmation
    # A new book read from the store has the same families, the adopted one included.
    assert TagBook.from_store(store).families() == {1: "greedy", 2: "greedy", 4: "sweep line"}
    store.close()


def test_an_unusable_reply_fails_the_step_not_the_run(tmp_path: Path):
    store = _store(tmp_path, {1: 1.0})
    with ScriptedLLM(lambda messages, index: "It is probably greedy.") as llm:
        tagger = _tagger(llm, store)
        for _ in range(2):
            with pytest.raises(StepFailed, match="no 'FAMILY:'"):
                asyncio.run(tagger.step(0))
        assert not tagger.due(1)  # given up on for this session after two failures
    assert store.events.of_type(StrategyTagged) == []
    store.close()


def test_a_model_that_drops_the_new_name_gets_the_known_family(tmp_path: Path):
    store = _store(tmp_path, {1: 1.0})

    def reply(messages, index):
        if CONFIRM_QUESTION in messages[-1]["content"]:
            return "FAMILY: local search | IDEA: improve step by step"
        return "FAMILY: stepwise improvement | IDEA: small steps"

    with ScriptedLLM(reply) as llm:
        asyncio.run(_tagger(llm, store).step(0))
        confirm = json.dumps(llm.requests[-1])
    assert "stepwise improvement" in confirm and "local search" in confirm
    [tag] = store.events.of_type(StrategyTagged)
    assert (tag.family, tag.insisted, tag.key_idea) == ("local search", False,
                                                        "improve step by step")
    store.close()


def test_the_niches_section_is_strict_and_names_a_configured_model():
    from pydantic import ValidationError

    from cambrian.config import RunConfig
    from cambrian.core.errors import ConfigError
    from cambrian.search.build import check_names

    with pytest.raises(ValidationError, match="max_per_nich"):
        RunConfig.model_validate({"niches": {"max_per_nich": 3}})
    with pytest.raises(ValidationError, match="at least one weight"):
        NichesConfig(distance={"strategy": 0, "behaviour": 0, "structure": 0})
    with pytest.raises(ConfigError, match="niches.model 'nope' is not one of llm.models"):
        check_names(RunConfig.model_validate({"niches": {"model": "nope"}}))
