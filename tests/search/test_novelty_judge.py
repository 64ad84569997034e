"""The novelty judge's prompt and reply parsing, what happens when it gives no verdict, and the
per-island index: the initial program on every island, migrated programs on their new island."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import add_candidate, sql, stored_events

from cambrian.api import resume, start
from cambrian.config import LLMConfig, ModelConfig, NoveltyConfig
from cambrian.llm.embeddings import LocalEmbedder, OpenAIEmbedder
from cambrian.llm.factory import build_providers
from cambrian.llm.gateway import LLMGateway
from cambrian.search.novelty import NoveltyFilter, NoveltyIndexing
from cambrian.search.novelty_judge import JUDGE_QUESTION, judge_prompt, parse_judge_reply
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store

CIRCLES = Path(__file__).resolve().parents[2] / "examples" / "circle_packing" / "initial.py"


@pytest.mark.parametrize("reply, verdict", [
    ("DIFFERENT", True), ("SAME", False), ("different", True), ("Same.", False),
    ("**DIFFERENT**", True), ("Answer: SAME", False), ("NOVEL", True), ("NOT_NOVEL", False),
    ("not novel", False), ("The change is not the same algorithm: DIFFERENT", True),
    ("It is not different in substance.", False), ("They are not meaningfully different", False),
    ("SAME - only a constant changed, nothing DIFFERENT", False),
    ("", None), ("maybe", None), ("I cannot tell", None), ("NOTHING to add", None),
])
def test_judge_replies_are_parsed_robustly(reply: str, verdict: bool | None):
    assert parse_judge_reply(reply) is verdict


def test_judge_prompt_is_a_short_diff_of_the_mutable_code():
    source = CIRCLES.read_text()
    tweaked = source.replace("0.5 + 0.3 * np.cos", "0.5 + 0.32 * np.cos")
    assert tweaked != source
    prompt = judge_prompt(source, tweaked)
    assert prompt.endswith(JUDGE_QUESTION)
    assert "-" in prompt and "0.5 + 0.32 * np.cos" in prompt
    assert len(prompt) < 600 < len(source)  # the diff, not the two programs
    rewrite = source.replace("EVOLVE-BLOCK-START", "EVOLVE-BLOCK-START\n" + "x = 1\n" * 500)
    assert len(judge_prompt(source, rewrite)) < 3600  # long changes are cut


def judge_filter(store: Store, llm: ScriptedLLM, **novelty) -> NoveltyFilter:
    """A real filter: scripted-server embeddings, the real OpenAI-compatible provider as judge."""
    config = LLMConfig(models=[ModelConfig(**llm.model_config(name="judge"))])
    config.retries.max_attempts = 1
    recorder = Recorder(store)
    gateway = LLMGateway(config.models, build_providers(config), recorder)
    return NoveltyFilter(NoveltyConfig(**{"threshold": 0.3, **novelty}),
                         OpenAIEmbedder("embed-test", base_url=llm.base_url), recorder,
                         gateway, "judge", num_islands=2)


def store_with_initial(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "run", create=True)
    add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                        status="correct", language="python",
                        source="# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n")
    return store


@pytest.mark.parametrize("failure", ["http_error", "unreadable"])
def test_a_judge_without_verdict_is_stored_and_logged_not_accepted(
        tmp_path: Path, failure: str, caplog: pytest.LogCaptureFixture):
    store = store_with_initial(tmp_path)
    status = (lambda index: 400) if failure == "http_error" else (lambda index: 200)
    with ScriptedLLM(lambda messages, index: "hmm, hard to say", status_for=status) as llm:
        novelty = judge_filter(store, llm)
        asyncio.run(novelty.index_initial(store.candidates.get(1)))
        verdict = asyncio.run(novelty.check(
            "# EVOLVE-BLOCK-START\nVALUE = 2\n# EVOLVE-BLOCK-END\n", island=1))
    assert not verdict.novel and verdict.nearest_id == 1  # the initial program is on island 1
    assert "the novelty judge gave no verdict" in verdict.reason
    context = sql(store, "SELECT error, response_text FROM contexts WHERE id=?",
                            (verdict.judge_context_id,)).fetchone()
    if failure == "http_error":
        assert "400" in context[0] and context[1] is None
    else:
        assert context == ("", "hmm, hard to say") and "unreadable reply" in verdict.reason
    events = stored_events(store, "novelty_judge_error")
    assert len(events) == 1 and events[0]["payload"]["context_id"] == verdict.judge_context_id
    assert "novelty judge gave no verdict" in caplog.text


def test_a_judge_without_verdicts_backs_off_and_the_code_decides(tmp_path: Path):
    """Under the automatic threshold a judge that cannot answer is asked, then again 2 checks
    later, then 4 later, and so on: meanwhile, as without a judge, only a copy that differs in
    comments or layout is refused."""
    store = store_with_initial(tmp_path)
    with ScriptedLLM(lambda messages, index: "hmm, hard to say") as llm:
        novelty = judge_filter(store, llm, threshold="auto")
        novelty.threshold = 0.0  # every proposal is "near" the initial program
        asyncio.run(novelty.index_initial(store.candidates.get(1)))
        verdicts = [asyncio.run(novelty.check(
            f"# EVOLVE-BLOCK-START\nVALUE = {n}\n# EVOLVE-BLOCK-END\n", island=0))
            for n in range(2, 10)]
        judged = len(store.contexts.list("novelty"))
        copy = asyncio.run(novelty.check(
            "# EVOLVE-BLOCK-START\nVALUE = 1  # the same\n# EVOLVE-BLOCK-END\n", island=0))
    assert all(v.novel for v in verdicts)
    # Asked at checks 1, 3 (2 later) and 7 (4 later); the next would be 15.
    assert [v.judge_context_id is not None for v in verdicts] == [
        True, False, True, False, False, False, True, False]
    assert judged == 3
    assert not copy.novel and "only comments or layout differ" in copy.reason


def test_no_judge_call_once_the_budget_is_spent_or_the_verdict_is_unused(tmp_path: Path):
    store = store_with_initial(tmp_path)
    near_copy = "# EVOLVE-BLOCK-START\nVALUE = 2\n# EVOLVE-BLOCK-END\n"
    with ScriptedLLM(lambda messages, index: "DIFFERENT") as llm:
        novelty = judge_filter(store, llm)
        asyncio.run(novelty.index_initial(store.candidates.get(1)))
        unused = asyncio.run(novelty.check(near_copy, island=0, use_judge=False))
        novelty.gateway.budget = lambda calls: "LLM call budget reached (3 of 3 calls)"
        capped = asyncio.run(novelty.check(near_copy, island=0))
        chat_calls = [m for m in llm.requests if m]  # embedding requests carry no messages
    assert not unused.novel and not capped.novel
    assert "the novelty judge was not asked: LLM call budget reached" in capped.reason
    assert chat_calls == [] and store.contexts.count() == 0


def island_run(tmp_path: Path, llm: ScriptedLLM, generations: int, *sets: str):
    task = write_counter_task(tmp_path / "task")
    evolution = start(task, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]",
        f"evolution.generations={generations}", "novelty.embedding=openai",
        f"novelty.base_url={llm.base_url}", "novelty.embedding_model=embed-test",
        "meta.enabled=false", *sets,
    ])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    return evolution


def membership(novelty: NoveltyFilter, store: Store) -> dict[int, set[int]]:
    ids = [int(r[0]) for r in sql(store, "SELECT candidate_id FROM embeddings")]
    return {island: {i for i in ids if novelty.index.contains(island, i)}
            for island in range(novelty.num_islands)}


def test_initial_and_migrated_programs_are_indexed_on_their_islands(tmp_path: Path):
    with ScriptedLLM(incrementing) as llm:
        evolution = island_run(tmp_path, llm, 10, "database.num_islands=3",
                               "database.migration_interval=2", "database.migration_rate=0.5")
        store = Store.open(tmp_path / "run")
        live = membership(evolution.hook("novelty").filter, store)
        assert all(1 in live[island] for island in range(3))
        moves = [m for e in stored_events(store, "migration") for m in e["payload"]["moves"]]
        embedded = {int(r[0]) for r in sql(store, "SELECT candidate_id FROM embeddings")}
        arrivals = [m for m in moves if m["candidate_id"] in embedded and m["candidate_id"] != 1]
        assert arrivals, "the run must migrate an embedded child"
        for move in arrivals:
            assert move["candidate_id"] in live[move["to_island"]]
            home = store.candidates.get(move["candidate_id"]).island
            assert move["candidate_id"] in live[home]  # still where it was proposed
        # Resume rebuilds the same per-island index from the store.
        resumed = resume(tmp_path / "run")
        resumed.restore()
        assert membership(resumed.hook("novelty").filter, store) == live
        resumed.store.close()
        store.close()


def test_without_a_judge_the_code_decides_above_the_automatic_threshold(tmp_path: Path):
    """The contest program's case: MiniLM puts a changed constant of a long program above 0.999,
    so without a judge only a copy that differs in comments or layout is refused."""
    example = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"
    source = (example / "initial.cpp").read_text()
    store = Store.open(tmp_path / "run", create=True)
    add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                        status="correct", language="cpp", source=source)
    novelty = NoveltyFilter(NoveltyConfig(judge=False), LocalEmbedder.shared(), Recorder(store),
                            language="cpp")
    asyncio.run(novelty.index_initial(store.candidates.get(1)))
    tuned = source.replace("(double)value / steps_there;", "(double)value / (steps_there + 0.5);")
    verdict = asyncio.run(novelty.check(tuned, island=0))
    assert verdict.similarity > novelty.threshold and verdict.novel
    # A threshold the user set is taken at its word; a copy that differs only in comments and
    # layout is refused under any threshold, with that reason.
    explicit = NoveltyFilter(NoveltyConfig(judge=False, threshold=0.9), LocalEmbedder.shared(),
                             Recorder(store), language="cpp")
    asyncio.run(explicit.index_initial(store.candidates.get(1)))
    set_threshold = asyncio.run(explicit.check(tuned, island=0))
    assert not set_threshold.novel and set_threshold.reason.startswith("too similar")
    commented = source.replace("    return route;\n", "    return route;  // the plan\n\n", 1)
    assert commented != source
    copy = asyncio.run(explicit.check(commented, island=0))
    assert not copy.novel and copy.reason.endswith("only comments or layout differ")


def test_exact_tests_and_cached_verdicts_come_before_the_judge(tmp_path: Path):
    """Above the threshold: a proposal that only renamed local variables is refused by its
    normal form, with no judge call; the judge's verdict on a change is reused for the same
    change proposed again (other comments too), also after a resume (the hook's state)."""
    program = ("# EVOLVE-BLOCK-START\nVALUE = 1\n\n\ndef run():\n    total = VALUE * 2\n"
               "    return total\n# EVOLVE-BLOCK-END\n")
    store = Store.open(tmp_path / "run", create=True)
    add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                  status="correct", language="python", source=program)
    with ScriptedLLM(lambda messages, index: "SAME") as llm:
        novelty = judge_filter(store, llm, threshold=0.0001)
        asyncio.run(novelty.index_initial(store.candidates.get(1)))

        def check(source: str, on: NoveltyFilter = novelty):
            return asyncio.run(on.check(source, island=0))

        renamed = check(program.replace("total", "result"))
        assert not renamed.novel and renamed.decided == "normal form"
        assert "local variable names differ" in renamed.reason
        assert store.contexts.count("novelty") == 0
        tuned = check(program.replace("VALUE * 2", "VALUE * 3"))
        assert not tuned.novel and tuned.decided == "judge"
        again = check(program.replace("VALUE * 2", "VALUE * 3  # triple").replace("total", "t"))
        assert not again.novel and again.decided == "cache"
        assert "its verdict on the same change" in again.reason
        assert store.contexts.count("novelty") == 1

        saved = NoveltyIndexing(novelty).state()
        resumed = judge_filter(store, llm, threshold=0.0001)
        NoveltyIndexing(resumed).load_state(saved)
        asyncio.run(resumed.index_initial(store.candidates.get(1)))
        assert check(program.replace("VALUE * 2", "VALUE * 3"), resumed).decided == "cache"
        assert check(program.replace("VALUE * 2", "VALUE + 3"), resumed).decided == "judge"
        assert store.contexts.count("novelty") == 2
