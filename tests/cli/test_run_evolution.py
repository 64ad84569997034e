"""`cambrian.run_evolution`: code as a string, the evaluator as a Python callable (or a file, or a
task folder), the best code back with its score, metrics and the run's history; from plain
Python and from inside a running event loop, as a notebook runs it. Real runs: the scripted
OpenAI-compatible server, real sandboxed evaluations of the pickled callable."""

from __future__ import annotations

import asyncio
import runpy
import threading
import warnings
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

import cambrian
from cambrian.api import EvolutionResult, model_entry, resume
from cambrian.config import ConfigError
from cambrian.core.events import CandidateEvaluated, Event, SessionEnded
from cambrian.search.live_feed import probe
from cambrian.task.inline import EvaluatorNotPicklable

QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false"]
CODE = """# EVOLVE-BLOCK-START
VALUE = 1
# EVOLVE-BLOCK-END


def run():
    return VALUE
"""
LIMIT = 1000


def score_value(program_path):
    """Make run() return as large a number as possible, at most 1000."""
    value = runpy.run_path(program_path)["run"]()
    if value > LIMIT:  # a module global: pickled with the function, by value
        return {"correct": False, "error": f"{value} is over {LIMIT}"}
    return {"combined_score": float(value), "public": {"value": value, "doubled": 2 * value}}


def options(llm: ScriptedLLM, tmp_path: Path, name: str, **more):
    return {"generations": 3, "model": "scripted", "api_base": llm.base_url,
            "run_dir": tmp_path / name, "overrides": QUIET, **more}


def check_result(result: EvolutionResult, evaluations: int = 3, doubled: bool = True) -> None:
    assert result.outcome == "completed" and result.evaluations == evaluations
    assert result.initial_score == 1.0 and result.best_score is not None
    assert result.best_score > 1.0
    assert f"VALUE = {int(result.best_score)}" in (result.best_code or "")
    value = int(result.best_score)
    assert result.best_metrics == ({"value": value, "doubled": 2 * value} if doubled
                                   else {"value": value})


def test_a_callable_evaluator_runs_contained_and_the_best_code_comes_back(tmp_path: Path):
    events: list[Event] = []
    live: list[bool] = []

    def on_event(event: Event) -> None:
        events.append(event)
        if isinstance(event, CandidateEvaluated):  # `cambrian ui` sees the run live
            live.append(probe(tmp_path / "run"))

    with ScriptedLLM(incrementing) as llm:
        result = cambrian.run_evolution(CODE, score_value, on_event=on_event,
                                        **options(llm, tmp_path, "run"))
    check_result(result)
    assert live and all(live) and not probe(tmp_path / "run")
    assert isinstance(events[-1], SessionEnded) and events[-1].outcome == "completed"
    assert sum(isinstance(e, CandidateEvaluated) for e in events) == 4  # the initial one too

    task = tmp_path / "run" / "task"  # the task folder lives in the run folder
    assert (task / "evaluator.pkl").is_file() and (task / "initial.py").read_text() == CODE
    # The function's docstring is the task's statement; the run is an ordinary one.
    assert "Make run() return" in (task / "evaluate.py").read_text()
    assert cambrian.run_status(tmp_path / "run").best_score == result.best_score

    rows = result.history()
    assert [row["id"] for row in rows] == [1, 2, 3, 4]
    assert rows[0]["operator"] == "init" and rows[0]["parent_id"] is None
    assert rows[0]["metrics"] == {"value": 1, "doubled": 2} and rows[0]["evaluation"] == 0
    assert {row["model"] for row in rows[1:]} == {"scripted"}
    assert max(row["score"] or 0 for row in rows) == result.best_score
    frame = result.to_dataframe()
    assert list(frame["id"]) == [1, 2, 3, 4] and frame["score"].max() == result.best_score


def test_to_dataframe_without_pandas_says_what_to_install(tmp_path: Path, monkeypatch):
    result = EvolutionResult(None, None, {}, None, None, tmp_path, "", "completed", 0, 0)
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install pandas.*history\(\)"):
        result.to_dataframe()


def test_inside_a_running_event_loop_as_in_a_notebook(tmp_path: Path):
    """A notebook cell runs in an event loop: the blocking call still works (on a loop of its
    own in a worker thread), the coroutine can be awaited, and the events can be iterated."""
    with ScriptedLLM(incrementing) as llm:
        async def cell() -> tuple[EvolutionResult, EvolutionResult, list[object]]:
            loop_thread = threading.get_ident()
            seen: list[int] = []
            blocking = cambrian.run_evolution(
                CODE, score_value, on_event=lambda event: seen.append(threading.get_ident()),
                **options(llm, tmp_path, "blocking"))
            assert seen and loop_thread not in seen  # the run had a thread of its own
            awaited = await cambrian.run_evolution_async(CODE, score_value,
                                                         **options(llm, tmp_path, "awaited"))
            streamed = [item async for item in cambrian.stream_evolution(
                CODE, score_value, **options(llm, tmp_path, "streamed"))]
            return blocking, awaited, streamed

        blocking, awaited, streamed = asyncio.run(cell())
    check_result(blocking)
    check_result(awaited)
    assert isinstance(streamed[-1], EvolutionResult)
    check_result(streamed[-1])
    kinds = [item.kind for item in streamed[:-1]]
    assert kinds[0] == "session_start" and kinds[-1] == "session_end"
    assert kinds.count("evaluated") == 4


def test_leaving_the_stream_early_stops_the_run_resumably(tmp_path: Path):
    with ScriptedLLM(incrementing, delay_s=0.2) as llm:
        async def cell() -> None:
            async for item in cambrian.stream_evolution(
                    CODE, score_value, **options(llm, tmp_path, "run", generations=20)):
                if isinstance(item, CandidateEvaluated) and item.candidate_id > 1:
                    break

        asyncio.run(cell())
        status = cambrian.run_status(tmp_path / "run")
        assert status.outcome == "interrupted" and status.generations < 20
        evolution = resume(tmp_path / "run", overrides=["evolution.generations=3"])
        try:
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    assert summary.outcome.word == "completed"


def test_code_without_markers_gets_them_with_a_warning(tmp_path: Path):
    bare = "VALUE = 1\n\n\ndef run():\n    return VALUE\n"
    with ScriptedLLM(incrementing) as llm, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cambrian.run_evolution(bare, score_value, **options(llm, tmp_path, "run",
                                                                      generations=1))
    assert any("no EVOLVE-BLOCK-START/EVOLVE-BLOCK-END markers" in str(w.message) for w in caught)
    initial = (tmp_path / "run" / "task" / "initial.py").read_text()
    assert initial == f"# EVOLVE-BLOCK-START\n{bare}# EVOLVE-BLOCK-END\n"
    assert result.initial_score == 1.0


def test_a_closure_is_pickled_with_what_it_captured(tmp_path: Path):
    limit = 2  # captured: the evaluation process gets the value, not the notebook's variable

    def capped(program_path):
        value = runpy.run_path(program_path)["run"]()
        return {"combined_score": float(min(value, limit))}

    with ScriptedLLM(incrementing) as llm:
        result = cambrian.run_evolution(CODE, capped, **options(llm, tmp_path, "run"))
    assert result.best_score == 2.0 and result.initial_score == 1.0


def test_an_unpicklable_evaluator_is_refused_before_anything_is_made(tmp_path: Path):
    lock = threading.Lock()

    def locked(program_path):
        with lock:
            return {"combined_score": 1.0}

    with pytest.raises(EvaluatorNotPicklable, match="cannot be sent to the evaluation process"):
        cambrian.run_evolution(CODE, locked, generations=1, run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_an_evaluator_file_or_a_task_folder(tmp_path: Path):
    folder = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        from_file = cambrian.run_evolution(CODE.replace("VALUE = 1", "VALUE = 2"),
                                           folder / "evaluate.py",
                                           **options(llm, tmp_path, "file"))
        in_place = cambrian.run_evolution(evaluator=folder, **options(llm, tmp_path, "folder"))
        replaced = cambrian.run_evolution(CODE.replace("VALUE = 1", "VALUE = 5"), folder,
                                          **options(llm, tmp_path, "copy"))
        program = tmp_path / "start.py"
        program.write_text(CODE.replace("VALUE = 1", "VALUE = 3"))
        by_name = cambrian.run_evolution(str(program), folder / "evaluate.py",
                                         **options(llm, tmp_path, "named"))
    assert by_name.initial_score == 3.0  # a string naming a file is that file's program
    assert from_file.initial_score == 2.0 and from_file.best_score > 2.0
    assert from_file.best_metrics["value"] == from_file.best_score
    check_result(in_place, doubled=False)
    assert not (tmp_path / "folder" / "task").exists()  # the folder was used as it is
    assert replaced.initial_score == 5.0
    assert (folder / "initial.py").read_text().count("VALUE = 1") == 1  # untouched


def test_evolve_also_works_inside_a_running_loop(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        async def cell():
            return cambrian.evolve(task, run_dir=tmp_path / "run", overrides=[
                *QUIET, "evolution.generations=2",
                f"llm.models=[{{provider: openai, model: scripted, base_url: '{llm.base_url}'}}]"])

        summary = asyncio.run(cell())
    assert summary.evaluations == 2 and summary.outcome.word == "completed"


def test_the_one_model_flags():
    assert model_entry(None) is None
    assert model_entry("qwen2.5-coder-0.5b") == {"provider": "local",
                                                 "model": "qwen2.5-coder-0.5b-instruct"}
    assert model_entry("gpt-4o-mini") == {"provider": "openai", "model": "gpt-4o-mini"}
    assert model_entry("claude-sonnet-4-5")["provider"] == "anthropic"
    assert model_entry("gemini-2.5-flash", api_key_env="MY_KEY") == {
        "provider": "gemini", "model": "gemini-2.5-flash", "api_key_env": "MY_KEY"}
    assert model_entry("claude-x", api_base="http://h/v1") == {  # a server: OpenAI-compatible
        "provider": "openai", "model": "claude-x", "base_url": "http://h/v1"}
    with pytest.raises(ConfigError, match="--api-base need --model"):
        model_entry(None, api_base="http://h/v1")
    with pytest.raises(ConfigError, match="local model: it takes no --api-key-env"):
        model_entry("0.5b", api_key_env="KEY")
