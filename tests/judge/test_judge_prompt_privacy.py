"""Private (held-out) cases never reach ANY stored prompt, whatever asked the LLM: mutations,
problem comprehension, the first program, the meta-scratchpad, the novelty judge, prompt
evolution and an algorithm's own requests (AdaEvolve's breakthrough guidance).

Two judged runs on the reach task with private cases, through the real engine and the scripted
LLM, cover those purposes; afterwards the private cases are judged (as `cambrian
generalization` does) and their case ids and scores are looked for in every stored prompt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from judge_helpers import answer_diff, current_answer, write_reach_run_task
from support.scripted_llm import SCRIPTED_META_REPLY, ScriptedLLM
from support.store_queries import sql

from cambrian.api import start
from cambrian.core.status import EVALUATED as EVALUATED_STATUSES
from cambrian.evaluate.judge.factory import build_judged_evaluator
from cambrian.evaluate.judge.generalization import generalization_report
from cambrian.meta.comprehension import REQUEST_LINE as BRIEF_REQUEST
from cambrian.meta.prompt_archive import REWRITE_MARKER
from cambrian.mutate.first_program import REQUEST_LINE as FIRST_PROGRAM_REQUEST
from cambrian.search.novelty_judge import ANSWER_NOVEL, JUDGE_QUESTION
from cambrian.store.store import Store

PRIVATE_MARK = "98765"  # every private case id is seed-98765x
BRIEF = ("SUMMARY:\n- Print a number no larger than n.\nINPUT AND OUTPUT:\n- n in, x out.\n"
         "SCORING:\n- The score is x.\nCONSTRAINTS:\n- 0 <= x <= n.\n"
         "APPROACHES:\n1. Print n itself.\n")
FIRST_PROGRAM = ("Halve n\n```python\n# EVOLVE-BLOCK-START\ndef answer(n):\n    return n // 2\n"
                 "# EVOLVE-BLOCK-END\n\n\nprint(answer(int(input())))\n```\n")
# Scores x / 7: per-case and mean scores are distinctive decimals no prompt holds by accident.
SEVENTHS_SCORE = """
def score(input_text, output_text):
    n = int(input_text.split()[0])
    x = int(output_text.split()[0])
    if not 0 <= x <= n:
        return {"error": f"x={x} is outside [0, {n}]"}
    return {"score": x / 7}
"""
EXPECTED_PURPOSES = {"mutation", "comprehension", "first_program", "meta", "novelty",
                     "prompt_evolution", "paradigm"}


def reply(messages: list[dict[str, str]], index: int) -> str:
    last = messages[-1]["content"]
    if BRIEF_REQUEST in last:
        return BRIEF
    if FIRST_PROGRAM_REQUEST in last:
        return FIRST_PROGRAM
    if "Update the notes" in last:
        return SCRIPTED_META_REPLY
    if JUDGE_QUESTION in last:
        return ANSWER_NOVEL
    if REWRITE_MARKER in last:
        return "You are a careful programmer who checks every bound before printing an answer."
    if "Paradigm breakthrough request" in last:
        return "DIRECTION: Print a fixed fraction of n chosen from the score history."
    # A mutation: a different fraction of n on every call, never better than n // 2, so that
    # AdaEvolve stalls and asks for a breakthrough.
    return answer_diff(f"n * {index + 2} // {2 * index + 5}", current_answer(messages))


def run(task: Path, run_dir: Path, llm: ScriptedLLM, *extra: str) -> None:
    evolution = start(task, run_dir=run_dir, overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=4",
        "evolution.patch_types=[diff]", "evolution.patch_type_probs=[1.0]",
        "mutation.schedule=off", "meta.interval=1", *extra])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("private")
    full = write_reach_run_task(root / "full", public_seeds=[0, 7], tiers={"quick_cases": 2})
    blank = write_reach_run_task(root / "blank")
    (blank / "initial.py").unlink()  # the LLM writes the first program
    for task in (full, blank):
        (task / "score.py").write_text(SEVENTHS_SCORE)
    with ScriptedLLM(reply) as llm:
        run(full, root / "run-full", llm, "novelty.enabled=true", "novelty.judge=true",
            "novelty.embedding=openai", f"novelty.base_url={llm.base_url}",
            "novelty.threshold=0.01", "prompt_evolution.enabled=true",
            "prompt_evolution.mutate_every=1")
        run(blank, root / "run-blank", llm, "novelty.enabled=false",
            "search.algorithm=adaevolve", "search.options.breakthrough_window=1",
            "search.options.guidance_uses=1")
    return [root / "run-full", root / "run-blank"]


def stored(run_dir: Path, query: str) -> list[tuple]:
    store = Store.open(run_dir)
    try:
        return sql(store, query).fetchall()
    finally:
        store.close()


async def private_results(run_dir: Path) -> tuple[set[str], set[float]]:
    """(case ids, scores) of the private set for every program the run evaluated, judged in a
    scratch directory so the run's own case cache stays as the run left it."""
    store = Store.open(run_dir)
    try:
        info = store.runs.info()
        sources = [row.source for row in store.candidates.list(*EVALUATED_STATUSES) if row.source]
    finally:
        store.close()
    judge = build_judged_evaluator(Path(info.task_dir), info.config["judge"],
                                   run_dir=run_dir / "scratch")
    ids: set[str] = set()
    scores: set[float] = set()
    for source in sources:
        result = await judge.evaluate_private(source, run_dir / "scratch" / "work")
        for case in result.private["cases"]:
            ids.add(case["case"])
            if case["score"] is not None:
                scores.add(float(case["score"]))
        if result.combined_score is not None:
            scores.add(result.combined_score)
    return ids, scores


def public_scores(run_dir: Path) -> set[float]:
    """Every score the run's stored evaluations hold: per case, per stage, aggregated."""
    values: set[float] = set()
    for score, public, extra in stored(run_dir, "SELECT combined_score, public_json, extra_json "
                                                "FROM evaluations"):
        values.update([score] if score is not None else [])
        values.update(v for v in json.loads(public).values() if isinstance(v, float))
        values.update(c["score"] for c in json.loads(extra).get("cases", [])
                      if c.get("score") is not None)
    return values


def test_every_purpose_was_exercised(runs: list[Path]):
    purposes = {p for run_dir in runs
                for (p,) in stored(run_dir, "SELECT purpose FROM contexts WHERE error = ''")}
    assert EXPECTED_PURPOSES <= purposes


async def test_private_cases_reach_no_stored_prompt(runs: list[Path]):
    for run_dir in runs:
        # The run never generated, let alone ran, a private case...
        cache = run_dir / ".case_cache"
        assert not [p for p in cache.rglob("*") if PRIVATE_MARK in p.name]
        assert stored(run_dir, "SELECT COUNT(*) FROM evaluations WHERE private_json != '{}'") \
            == [(0,)]
        prompts = [json.loads(m) for (m,) in stored(run_dir, "SELECT messages_json FROM contexts")]
        assert len(prompts) >= 8
        text = "\n".join(m["content"] for messages in prompts for m in messages)

        # ...and after judging every one of its programs on the private set, none of those
        # case ids and per-case or mean scores appears in any prompt (a value that is also a
        # public score may: the same n can occur in both sets).
        ids, scores = await private_results(run_dir)
        assert len(ids) == 3 and all(PRIVATE_MARK in i for i in ids)  # seeds 987650..2
        assert PRIVATE_MARK not in text
        public = public_scores(run_dir)
        private_only = {s for s in scores if s != int(s)  # 42.0 = 294 / 7 is no sign of a leak
                        and not any(abs(s - p) < 1e-9 for p in public)}
        assert len(private_only) >= 6
        for score in private_only:
            for spelling in (f"{score:.6g}", repr(score)):
                assert spelling not in text, (run_dir.name, spelling)

        report = await generalization_report(run_dir)
        assert report.private_cases == 3 and report.steps
        assert all(step.private_score is not None for step in report.steps)
