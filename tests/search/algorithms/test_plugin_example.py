"""The plugin example of docs/algorithms.md, run exactly as written."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from algorithm_helpers import run_algorithm
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.config import ConfigError, RunConfig, SearchConfig
from cambrian.core.components import make_component, register_component
from cambrian.mutate.prompts import ContextBuilder
from cambrian.mutate.proposer import Generator
from cambrian.search.registry import make_selector
from cambrian.task.folder import load_task

DOC = Path(__file__).resolve().parents[3] / "docs" / "algorithms.md"


def doc_blocks(language: str, heading: str = "## Adding an algorithm as a plugin") -> list[str]:
    section = DOC.read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)


def test_the_documented_plugin_runs_three_generations(tmp_path: Path, monkeypatch):
    (module,) = doc_blocks("python")
    (config,) = doc_blocks("yaml")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "my_search.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.delitem(sys.modules, "my_search", raising=False)
    task = write_counter_task(tmp_path / "task", config=config)  # the documented config, as is
    with ScriptedLLM(incrementing) as llm:
        run = run_algorithm(task, tmp_path / "run", llm, "tournament", 3)
    assert run.summary.evaluations == 3
    assert run.summary.best_score > run.summary.initial_score
    stored = run.store.runs.info().config["search"]
    assert {k: stored[k] for k in ("algorithm", "plugins", "options")} == {
        "algorithm": "tournament", "plugins": ["my_search"], "options": {"size": 2}}
    with pytest.raises(ConfigError, match="did you mean 'size'"):
        make_selector(RunConfig(search=SearchConfig(algorithm="tournament", plugins=["my_search"],
                                                    options={"sise": 2})))


def test_the_documented_component_plugin_runs(tmp_path: Path, monkeypatch):
    heading = "## Swapping the other components"
    (module,) = doc_blocks("python", heading)
    (config,) = doc_blocks("yaml", heading)
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "my_parts.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.delitem(sys.modules, "my_parts", raising=False)
    task = write_counter_task(tmp_path / "task", config=config)
    with ScriptedLLM(incrementing) as llm:
        run = run_algorithm(task, tmp_path / "run", llm, "shinka", 3)
        prompts = [request for request in llm.requests if request]
    assert run.summary.evaluations == 3
    assert all(request[0]["content"].endswith("House rules: no global state.")
               for request in prompts if request[0]["role"] == "system")
    timed = [run.store.evaluations.latest(row.id) for row in run.store.candidates.list("correct")]
    assert timed and all(isinstance(result.public["seconds"], float) for result in timed)
    with pytest.raises(ConfigError, match="did you mean 'house-rules'"):
        make_component("context_builder", "house-rulez")


def test_a_component_without_what_the_loop_needs_is_a_config_error(tmp_path: Path):
    """A generator or context builder is checked against its contract when the run is built:
    one lacking a member is refused before the run starts, with what it lacks."""

    class Silent:
        prompts = None  # but no propose()

    register_component("generator", "silent", lambda **arguments: Silent())
    with pytest.raises(ConfigError, match=r"search.generator 'silent' makes a Silent, which "
                                          r"lacks propose of a Generator"):
        make_component("generator", "silent", Generator)
    task = load_task(write_counter_task(tmp_path / "task"), RunConfig())
    assert isinstance(make_component("context_builder", "default", ContextBuilder,
                                     task=task, config=RunConfig().prompt), ContextBuilder)
