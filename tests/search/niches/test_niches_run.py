"""``cambrian run --search niches`` end to end, with the scripted LLM answering the mutation and
the tagging prompts: every correct program is tagged once and the tags are stored, the parent's
strategy reaches the prompts, ``cambrian status`` and the web UI's data show the niches, and a
resumed run keeps the tags without asking again."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.meta.strategy_prompts import CONFIRM_QUESTION, TAG_QUESTION
from cambrian.meta.strategy_tagger import PURPOSE
from cambrian.meta.strategy_tags import StrategyTagged
from cambrian.store.store import Store
from cambrian.ui.data import niche_items

CLI = [sys.executable, "-m", "cambrian.cli"]
FAMILIES = ["Greedy", "Simulated-Annealing approach", "tabu search"]


def cambrian(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def reply(messages: list[dict[str, str]], index: int) -> str:
    """Tagging prompts: the family follows the program's VALUE (mod 3); the third one is new to
    the vocabulary, and the model repeats it when asked. Anything else: a counter mutation."""
    first = next(m["content"] for m in messages if m["role"] == "user")
    if TAG_QUESTION in first:
        value = int(re.search(r"VALUE = (-?\d+)", first).group(1))
        if CONFIRM_QUESTION in messages[-1]["content"]:
            return "FAMILY: tabu search | IDEA: forbid recent moves"
        return f"FAMILY: {FAMILIES[value % 3]} | IDEA: set VALUE to {value}"
    return incrementing(messages, index)


def _tags(run_dir: Path) -> list[StrategyTagged]:
    store = Store.open(run_dir)
    try:
        return store.events.of_type(StrategyTagged)
    finally:
        store.close()


def test_niches_run_tags_every_correct_program_once_and_resumes_with_its_tags(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(reply) as llm:
        sets = ["--set", "llm.models=[" + json.dumps(llm.model_config()) + "]",
                "--set", "novelty.enabled=false", "--set", "meta.enabled=false"]
        first = cambrian("run", str(task), "--run-dir", str(run_dir), "-g", "6", "-q",
                         "--search", "niches", *sets)
        assert first.returncode == 0, first.stderr
        tags_before = _tags(run_dir)
        assert tags_before, "the first session tagged nothing"
        status = cambrian("status", str(run_dir))
        resumed = cambrian("resume", str(run_dir), "-g", "10", "-q")
        assert resumed.returncode == 0, resumed.stderr
        requests = list(llm.requests)

    store = Store.open(run_dir)
    correct = set(store.candidates.scores(CandidateStatus.CORRECT))
    tags = store.events.of_type(StrategyTagged)
    # Every correct program tagged, each exactly once over both sessions: the resumed session
    # asked only about the programs it made.
    assert [t.candidate_id for t in tags[:len(tags_before)]] == \
        [t.candidate_id for t in tags_before]
    assert Counter(t.candidate_id for t in tags) == Counter(correct)
    assert len(correct) == 11
    tag_prompts = [m for m in requests if TAG_QUESTION in m[0]["content"]]
    confirmations = [m for m in tag_prompts if CONFIRM_QUESTION in m[-1]["content"]]
    assert len(tag_prompts) - len(confirmations) == len(tags)
    calls = store.contexts.count_by_model(PURPOSE)
    assert sum(calls.values()) == len(tag_prompts)  # recorded in the ledger with a purpose
    # The unknown family joined the vocabulary when the model repeated it.
    assert {t.family for t in tags} <= {"greedy", "simulated annealing", "tabu search"}
    assert any(t.insisted and t.family == "tabu search" for t in tags) or not confirmations
    assert all(t.key_idea.startswith("set VALUE to") or t.insisted for t in tags)

    # Used: mutation prompts name the parent's strategy once the parent is tagged.
    mutations = [m for m in requests if TAG_QUESTION not in m[0]["content"]]
    noted = [m for m in mutations if "Strategy of this program: " in m[-1]["content"]]
    assert noted, "no mutation prompt named its parent's strategy"
    for prompt in noted:
        named = re.search(r"Strategy of this program: ([a-z][a-z ]*[a-z])",
                          prompt[-1]["content"])
        assert named is not None
        family = named[1]
        assert family in {"greedy", "simulated annealing", "tabu search"}

    # Shown: cambrian status and the web UI's overview data.
    assert status.returncode == 0, status.stderr
    assert "strategy niches" in status.stdout
    # Which families the first session found depends on the values its children reached, which
    # the parents drawn decide: every one it tagged is shown, whichever they are.
    shown = {t.family for t in tags_before}
    assert shown and all(family in status.stdout for family in shown), status.stdout
    items = niche_items(store, Objective.of("maximize"))
    assert sum(item["count"] for item in items) == len(correct)
    assert {item["family"] for item in items} == {t.family for t in tags}
    best = max(items, key=lambda item: item["best_score"])
    assert best["best_id"] == store.candidates.best(Objective.of("maximize")).id
    assert best["elites"][0] == best["best_id"] and best["key_idea"]
    store.close()
