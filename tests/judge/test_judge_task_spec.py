"""The judge config section, case sets, the case cache and both scorer shapes."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_helpers import reach_judge, write_task

from cambrian.config.judge import (
    JudgeConfigError,
    expand_seeds,
    parse_judge_config,
    resolve_judge_task,
)
from cambrian.evaluate.judge.cases import CaseGenerationError, CaseStore
from cambrian.evaluate.judge.factory import build_judged_evaluator
from cambrian.evaluate.judge.scoring import Scorer


def test_seed_ranges_are_inclusive_and_may_be_lists():
    config = parse_judge_config({"language": "cpp", "public_seeds": [0, 4],
                                 "private_seeds": [[10, 11], [20, 20]]})
    assert expand_seeds(config.public_seeds) == [0, 1, 2, 3, 4]
    assert expand_seeds(config.private_seeds) == [10, 11, 20]


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"language": "cpp", "public_seeds": [0, 4], "timelimit": 2},
         "unknown config key 'judge.timelimit'"),
        ({"language": "java", "public_seeds": [0, 4]}, "judge.language"),
        ({"language": "cpp", "public_seeds": [5, 1]}, "first <= last"),
        ({"language": "cpp"}, "exactly one of public_seeds"),
        ({"language": "cpp", "public_seeds": [0, 9], "private_seeds": [5, 20]}, "overlap"),
        ({"language": "cpp", "public_seeds": [0, 9], "tiers": {"quick_threshold": 1.5}},
         "quick_threshold"),
        ({"language": "cpp", "public_seeds": [0, 9], "remote": {"url": "ftp://x"}}, "http"),
    ],
)
def test_invalid_sections_are_rejected_with_a_clear_message(section, message):
    with pytest.raises(JudgeConfigError) as caught:
        parse_judge_config(section)
    assert message in str(caught.value)


def test_dumped_config_parses_back_to_itself():
    config = parse_judge_config({"language": "rust", "public_seeds": [0, 4],
                                 "private_seeds": [[10, 11], [20, 20]],
                                 "tiers": {"quick_cases": 2}, "remote": {"url": "http://x/"}})
    assert parse_judge_config(config.model_dump(mode="json")) == config


def test_minimize_task_without_failed_case_score_is_refused(reach_task: Path):
    config = parse_judge_config(reach_judge("cpp", require_all_accepted=False,
                                            direction="minimize"))
    with pytest.raises(JudgeConfigError, match="failed_case_score"):
        build_judged_evaluator(reach_task, config, run_dir=reach_task / "run")


def test_case_folders_prefer_dot_in_files(tmp_path: Path):
    task = write_task(tmp_path / "t", {"score.py": "def score(i, o):\n    return 1\n"})
    public = task / "cases" / "public"
    public.mkdir(parents=True)
    for name in ("b.in", "a.in", "a.out", ".hidden"):
        (public / name).write_text("5\n")
    config = parse_judge_config({"language": "python", "public_cases": "cases/public"})
    resolved = resolve_judge_task(task, config, "maximize")
    assert [c.case_id for c in resolved.public] == ["a.in", "b.in"]
    assert resolved.private == ()


async def test_generated_cases_are_cached_per_seed(reach_task: Path, tmp_path: Path):
    store = CaseStore(tmp_path / "cases", reach_task / "gen.py")
    config = parse_judge_config(reach_judge("python"))
    cases = resolve_judge_task(reach_task, config, "maximize").public
    first = await store.input_paths(cases)
    again = await CaseStore(tmp_path / "cases", reach_task / "gen.py").input_paths(cases)
    assert store.generated == 4
    assert first == again
    assert all(100 <= int(p.read_text()) <= 1000 for p in first)

    # Editing the generator invalidates its cases.
    (reach_task / "gen.py").write_text((reach_task / "gen.py").read_text() + "# edited\n")
    edited = CaseStore(tmp_path / "cases", reach_task / "gen.py")
    await edited.input_paths(cases[:1])
    assert edited.generated == 1


async def test_broken_generator_is_a_clear_setup_error(tmp_path: Path):
    task = write_task(tmp_path / "t", {"gen.py": "import sys\nsys.exit('no cases today')\n",
                                       "score.py": "def score(i, o):\n    return 1\n"})
    store = CaseStore(tmp_path / "cases", task / "gen.py")
    config = parse_judge_config({"language": "python", "public_seeds": [0, 0]})
    with pytest.raises(CaseGenerationError, match="no cases today"):
        await store.input_paths(resolve_judge_task(task, config, "maximize").public)


async def test_script_scorer_and_function_scorer_agree(reach_task: Path, tmp_path: Path):
    script = reach_task / "score_script.py"
    script.write_text(
        "import json, sys\n"
        "n = int(open(sys.argv[1]).read())\n"
        "x = int(open(sys.argv[2]).read())\n"
        "print(json.dumps({'score': x} if 0 <= x <= n else {'error': 'out of range'}))\n"
    )
    case = tmp_path / "case.in"
    case.write_text("500\n")
    good, bad = tmp_path / "good.out", tmp_path / "bad.out"
    good.write_text("321\n")
    bad.write_text("900\n")
    by_script = Scorer(script)
    by_function = Scorer(reach_task / "score.py")
    assert (by_script.mode, by_function.mode) == ("script", "function")
    for scorer in (by_script, by_function):
        assert (await scorer.score(case, good, tmp_path / "scoring" / "good")).score == 321
        rejected = await scorer.score(case, bad, tmp_path / "scoring" / "bad")
        assert rejected.score is None and "out" in (rejected.error or "")
        await scorer.close()
