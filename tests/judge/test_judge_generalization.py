"""The generalization report on a small real run of the example task.

Three real C++ candidates, evaluated on the public cases and recorded in a run store:
  1. the example's greedy baseline;
  2. a genuine improvement: insertion + 2-opt on even-sized grids, public AND private;
  3. an overfit one: insertion + 2-opt only on inputs it memorised from the public cases,
     greedy elsewhere -- better in public, back to the baseline in private.
The report must show 2 carrying over and flag 3.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import typer
import yaml
from judge_helpers import reach_judge
from support.store_queries import add_candidate
from typer.testing import CliRunner

from cambrian.api import start
from cambrian.cli.judge import register
from cambrian.config.judge import expand_seeds, parse_judge_config, resolve_judge_task
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.objective import MAXIMIZE, MINIMIZE
from cambrian.evaluate.judge.factory import build_judged_evaluator
from cambrian.evaluate.judge.generalization import best_so_far_chain, generalization_report
from cambrian.store.store import STORE_FILENAME, Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"
VARIANTS = Path(__file__).with_name("programs") / "orchard_variants.cpp"


def judge_section() -> dict:
    judge = yaml.safe_load((EXAMPLE / "config.yaml").read_text())["judge"]
    return {**judge, "public_seeds": [0, 9], "private_seeds": [1000, 1009], "tiers": None}


def header(case_text: str) -> tuple[int, int, int]:
    n, budget, k = case_text.split()[:3]
    return int(n), int(budget), int(k)


def variant(policy: str) -> str:
    return VARIANTS.read_text().replace("/*POLICY*/", policy)


def memorising_policy(headers: list[tuple[int, int, int]]) -> str:
    rows = ", ".join(f"{{{n}, {t}, {k}}}" for n, t, k in headers)
    return (f"static const int seen[][3] = {{{rows}}};\n"
            "    const int k = (int)in.tree_v.size();\n"
            "    for (const auto& row : seen)\n"
            "        if (row[0] == in.n && row[1] == in.budget && row[2] == k) return true;\n"
            "    return false;")


async def build_run(run_dir: Path) -> dict[str, int]:
    judge = judge_section()
    evaluator = build_judged_evaluator(EXAMPLE, judge, run_dir=run_dir)
    public_inputs = [(await evaluator.case_store.input_path(c)).read_text()
                     for c in evaluator.task.public]
    private_inputs = [(await evaluator.case_store.input_path(c)).read_text()
                      for c in evaluator.task.private]
    public_headers = [header(text) for text in public_inputs]
    assert not set(public_headers) & {header(text) for text in private_inputs}

    sources = {
        "baseline": (EXAMPLE / "initial.cpp").read_text(),
        "genuine": variant("return in.n % 2 == 0;"),
        "overfit": variant(memorising_policy(public_headers)),
    }
    store = Store.open(run_dir, create=True)
    config = {"task": {"name": "orchard_harvest", "direction": "maximize"}, "judge": judge}
    store.runs.create(run_id="generalization-test", task_name="orchard_harvest",
                     task_dir=str(EXAMPLE), direction="maximize", language="cpp",
                     config=json.loads(json.dumps(config)), seed=0, code_version="test")
    ids: dict[str, int] = {}
    parent = None
    for generation, (name, source) in enumerate(sources.items()):
        result = await evaluator.evaluate(source, run_dir / "work" / name)
        assert result.status == "ok", (name, result.error)
        with store.transaction():
            ids[name] = add_candidate(store, generation=generation, island=0, parent_id=parent,
                                            operator="test", status="pending", language="cpp",
                                            source=source)
            store.evaluations.add(ids[name], result)
            store.candidates.update(ids[name], status="correct", score=result.combined_score)
        parent = ids[name]
    store.close()
    return ids


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    run_dir = tmp_path_factory.mktemp("orchard_run")
    return run_dir, asyncio.run(build_run(run_dir))


async def test_report_flags_the_step_that_only_gained_in_public(example_run):
    run_dir, ids = example_run
    report = await generalization_report(run_dir)
    assert [s.candidate_id for s in report.steps] == [ids["baseline"], ids["genuine"],
                                                      ids["overfit"]]
    assert report.private_cases == 10
    start, genuine, overfit = report.steps
    assert start.public_delta is None and not start.overfit
    assert genuine.public_delta > 0 and genuine.private_delta > 0 and not genuine.overfit
    assert overfit.public_delta > 0 and overfit.private_delta < 0 and overfit.overfit
    # Off the memorised inputs the overfit program is the baseline, to the point.
    assert overfit.private_score == pytest.approx(start.private_score)
    assert report.overfit_steps == [overfit]
    assert not (run_dir / "generalization").exists()  # scratch folders are removed


def test_chain_skips_candidates_that_did_not_improve(example_run, tmp_path: Path):
    run_dir, ids = example_run
    shutil.copy(run_dir / STORE_FILENAME, tmp_path / STORE_FILENAME)  # leave the shared run be
    store = Store.open(tmp_path)
    try:
        worse = add_candidate(store, generation=3, island=0, parent_id=None, operator="test",
                                    status="pending", language="cpp", source="// worse\n")
        store.evaluations.add(worse, EvaluationResult(status="ok", combined_score=1.0))
        store.candidates.update(worse, status="correct", score=1.0)
        chain = [row.id for row in best_so_far_chain(store, MAXIMIZE)]
        assert chain == [ids["baseline"], ids["genuine"], ids["overfit"]]
        assert [row.id for row in best_so_far_chain(store, MINIMIZE)] == [ids["baseline"],
                                                                                worse]
    finally:
        store.close()


def test_cli_prints_the_table(example_run):
    run_dir, ids = example_run
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:  # a second command keeps typer from collapsing to a single command
        pass

    runner = CliRunner()
    table = runner.invoke(app, ["generalization", str(run_dir)], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "orchard_harvest" in table.output and "private cases" in table.output
    assert "did not carry over" in table.output
    assert "1 of 2 public improvements did not carry over" in table.output

    as_json = runner.invoke(app, ["generalization", str(run_dir), "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert [step["overfit"] for step in data["steps"]] == [False, False, True]


def test_cli_refuses_a_run_without_a_judge_section(tmp_path: Path):
    store = Store.open(tmp_path, create=True)
    store.runs.create(run_id="plain", task_name="plain", task_dir=str(tmp_path),
                     direction="maximize", language="python", config={"task": {}}, seed=0,
                     code_version="test")
    store.close()
    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["generalization", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a judged run" in " ".join(result.output.split())


def test_judge_section_round_trips_through_the_stored_config(tmp_path: Path):
    """`cambrian generalization` rebuilds the judge from the run's stored config: what a run
    started from the example stores must parse back to the very section the run used -- the
    same public and private cases, tiers and remote stage."""
    evolution = start(EXAMPLE, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps({"provider": "openai", "model": "unused",
                                     "base_url": "http://127.0.0.1:9/v1"}) + "]",
        "judge.public_seeds=[[0,4],[7,9]]", "judge.private_seeds=[2000,2019]",
        "judge.tiers.quick_cases=3", "judge.remote.url=http://127.0.0.1:9/score",
        "judge.aggregation=mean_minus_std", "judge.std_penalty=0.25",
    ])
    used = evolution.config.judge
    evolution.store.close()
    store = Store.open(tmp_path / "run")
    try:
        stored = store.runs.info().config["judge"]
    finally:
        store.close()

    parsed = parse_judge_config(stored)
    assert parsed == used
    assert expand_seeds(parsed.public_seeds) == [0, 1, 2, 3, 4, 7, 8, 9]
    assert expand_seeds(parsed.private_seeds) == list(range(2000, 2020))
    assert parsed.tiers is not None and parsed.tiers.quick_cases == 3
    assert parsed.tiers.quick_threshold == 0.9  # from the example's config.yaml
    assert parsed.remote is not None and parsed.remote.url == "http://127.0.0.1:9/score"
    assert (parsed.aggregation, parsed.std_penalty) == ("mean_minus_std", 0.25)
    task = resolve_judge_task(EXAMPLE, parsed, "maximize")
    assert [c.case_id for c in task.private] == [f"seed-{s}" for s in range(2000, 2020)]


async def test_failing_a_private_case_counts_as_not_carried_over(reach_task: Path, tmp_path: Path):
    judge = reach_judge("python")
    evaluator = build_judged_evaluator(reach_task, judge, run_dir=tmp_path)
    public_ns = [int((await evaluator.case_store.input_path(c)).read_text())
                 for c in evaluator.task.public]
    sources = {
        "half": "print(int(input()) // 2)\n",
        # Perfect on the public inputs it memorised, an invalid answer anywhere else.
        "memoriser": f"n = int(input())\nprint(n if n in {set(public_ns)!r} else -1)\n",
    }
    store = Store.open(tmp_path, create=True)
    store.runs.create(run_id="reach", task_name="reach", task_dir=str(reach_task),
                     direction="maximize", language="python", config={"judge": judge}, seed=0,
                     code_version="test")
    for name, source in sources.items():
        result = await evaluator.evaluate(source, tmp_path / name)
        candidate = add_candidate(store, generation=0, island=0, parent_id=None, operator="test",
                                        status="pending", language="python", source=source)
        store.evaluations.add(candidate, result)
        store.candidates.update(candidate, status="correct", score=result.combined_score)
    store.close()

    report = await generalization_report(tmp_path)
    start, memoriser = report.steps
    assert start.private_score is not None and not start.overfit
    assert memoriser.private_score is None and memoriser.private_status == "incorrect"
    assert memoriser.overfit and "WA" in memoriser.private_error
