"""Private (held-out) cases never run in normal evaluation and never reach prompt-visible fields."""

from __future__ import annotations

import json
from pathlib import Path

from judge_helpers import reach_judge
from scripted_server import Reply, ScriptedServer

from cambrian.config.judge import expand_seeds, parse_judge_config
from cambrian.evaluate.judge.factory import build_judged_evaluator, build_task_evaluator

PRIVATE_MARK = "98765"  # every private case id is seed-98765x
PROGRAM = "n = int(input())\nprint(n)\n"


async def test_public_evaluation_never_touches_private_cases(reach_task: Path, tmp_path: Path):
    judge = reach_judge("python", public_seeds=[0, 5], tiers={"quick_cases": 2},
                        remote={"url": "http://placeholder/", "send": "outputs",
                                "min_interval_s": 0})
    with ScriptedServer([], default=Reply(200, {"score": 5.0})) as server:
        judge["remote"]["url"] = server.url
        evaluator = build_task_evaluator(reach_task, judge, run_dir=tmp_path / "run",
                                         best_reference=lambda: None)
        result = await evaluator.evaluate(PROGRAM, tmp_path / "work")
        posted = json.dumps([r.payload for r in server.received])
    assert result.status == "ok"
    # Nothing in the result -- not only public/text_feedback, which prompts show -- and nothing
    # sent to the remote scorer mentions a private case.
    assert PRIVATE_MARK not in json.dumps(result.to_dict())
    assert PRIVATE_MARK not in posted
    case_store = evaluator.judge.case_store
    private_seeds = expand_seeds(parse_judge_config(judge).private_seeds)
    assert not any(case_store.cached_path(seed).exists() for seed in private_seeds)
    assert all(case_store.cached_path(seed).exists() for seed in range(6))


async def test_private_scores_land_only_in_the_private_field(reach_task: Path, tmp_path: Path):
    evaluator = build_judged_evaluator(reach_task, reach_judge("python"), run_dir=tmp_path / "r")
    public = await evaluator.evaluate(PROGRAM, tmp_path / "public")
    private = await evaluator.evaluate_private(PROGRAM, tmp_path / "private")
    assert private.correct and private.combined_score is not None
    assert private.combined_score != public.combined_score
    assert private.public == {} and private.text_feedback == "" and private.extra == {}
    assert private.error == ""
    assert PRIVATE_MARK in json.dumps(private.private["cases"])
    assert PRIVATE_MARK not in json.dumps(public.to_dict())
    assert str(private.combined_score) not in json.dumps(public.to_dict())
