"""docs/extending.md, run exactly as written: a reply format, a language and an LLM provider,
each added from outside the package by one plugin module and used by a real run."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from support.misbehaving_server import send
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start
from cambrian.core.errors import ConfigError
from cambrian.store.store import Store

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def doc_blocks(heading: str, language: str) -> list[str]:
    section = DOC.read_text().split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)


def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, heading: str,
                   name: str) -> dict:
    """The section's module saved as ``name``.py on the path; its YAML config as a dict."""
    (module,) = doc_blocks(heading, "python")
    (config,) = doc_blocks(heading, "yaml")
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(module)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return yaml.safe_load(config)


def run(task: Path, run_dir: Path, config: dict, overrides: list[str]):
    evolution = start(task, run_dir=run_dir, config=config, overrides=overrides)
    try:
        return asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def test_a_reply_format_plugin_is_used_for_focused_edits(tmp_path, monkeypatch):
    config = install_plugin(tmp_path, monkeypatch, "A reply format", "my_format")
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        config["llm"]["models"][0].update(base_url=llm.base_url, model="scripted",
                                          context_window=16384)
        summary = run(task, tmp_path / "run", config, [
            "evolution.generations=3", "evolution.patch_types=[diff]",
            "evolution.patch_type_probs=[1.0]", "mutation.schedule=off",
            "novelty.enabled=false", "meta.enabled=false"])
        prompts = [r[-1]["content"] for r in llm.requests if r]
    assert summary.evaluations == 3 and summary.best_score > summary.initial_score
    assert all("written `NAME = new value`" in prompt for prompt in prompts)
    store = Store.open(tmp_path / "run")
    children = [r for r in store.candidates.list("correct") if r.id != 1]
    assert children and all(r.notes["format"] == "settings" for r in children)
    store.close()
    with pytest.raises(ConfigError, match="did you mean 'settings'"):
        start(task, run_dir=tmp_path / "other", config=config,
              overrides=["llm.models=[{provider: openai, model: m, base_url: 'http://x/v1', "
                         "patch_format: setings}]"])


PERL_INITIAL = """\
use strict;
use warnings;

# EVOLVE-BLOCK-START
sub answer {
    my ($n) = @_;
    return int($n / 2);
}
# EVOLVE-BLOCK-END

my $n = <STDIN>;
print answer($n), "\\n";
"""
REACH_GEN = """\
import random, sys
print(random.Random(int(sys.argv[1])).randint(100, 1000))
"""
REACH_SCORE = """\
def score(input_text, output_text):
    n, x = int(input_text.split()[0]), int(output_text.split()[0])
    return {"score": x} if 0 <= x <= n else {"error": f"x={x} is outside [0, {n}]"}
"""


def closer_to_n(messages, index):
    """Each reply moves the answer closer to n (a diff of the return line)."""
    current = re.search(r"return (.*);", messages[-1]["content"]).group(1)
    better = ["$n - 100", "$n - 10", "$n - 1", "$n"][min(index, 3)]
    return (f"Answer closer to n\n<<<<<<< SEARCH\n    return {current};\n=======\n"
            f"    return {better};\n>>>>>>> REPLACE\n")


@pytest.mark.skipif(shutil.which("perl") is None, reason="needs perl")
def test_a_language_plugin_evolves_a_judged_program_in_that_language(tmp_path, monkeypatch):
    config = install_plugin(tmp_path, monkeypatch, "A language", "my_language")
    task = tmp_path / "reach-perl"
    task.mkdir()
    (task / "initial.pl").write_text(PERL_INITIAL)
    (task / "gen.py").write_text(REACH_GEN)
    (task / "score.py").write_text(REACH_SCORE)
    (task / "problem.md").write_text("Print an integer x with 0 <= x <= n; the score is x.\n")
    (task / "config.yaml").write_text(yaml.safe_dump(config))
    with ScriptedLLM(closer_to_n) as llm:
        summary = run(task, tmp_path / "run", {}, [
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=3",
            "evolution.patch_types=[diff]", "evolution.patch_type_probs=[1.0]",
            "mutation.schedule=off", "novelty.enabled=false", "meta.enabled=false",
            "comprehension.enabled=false"])
        prompts = [r[-1]["content"] for r in llm.requests if r]
    assert summary.evaluations == 3 and summary.best_score > summary.initial_score
    assert "```perl" in prompts[0]  # the language's fence tag
    store = Store.open(tmp_path / "run")
    assert store.runs.info().language == "perl"
    result = store.evaluations.latest(summary.best_id)
    assert result.extra["verdicts"] == {"AC": 4}  # run by the plugin's interpreter, per case
    broken = store.candidates.get(1).source.replace("return int($n / 2);", "return int($n / ;")
    from cambrian.lang.syntax import check_syntax
    assert check_syntax(broken, "perl") is not None  # the plugin's syntax check
    store.close()


class JsonCompletionServer:
    """The one-endpoint protocol of the provider example, answered by ``incrementing``."""

    def __init__(self) -> None:
        outer = self
        self.prompts: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.prompts.append(body["prompt"])
                user = body["prompt"].split("user: ", 1)[-1]
                text = incrementing([{"role": "user", "content": user}], len(outer.prompts))
                send(self, 200, json.dumps({"text": text, "tokens_in": 100,
                                            "tokens_out": 20}).encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def test_a_provider_plugin_answers_a_run_and_fills_the_ledger(tmp_path, monkeypatch):
    config = install_plugin(tmp_path, monkeypatch, "An LLM provider", "my_provider")
    server = JsonCompletionServer()
    config["llm"]["models"][0]["base_url"] = server.url
    task = write_counter_task(tmp_path / "task")
    try:
        summary = run(task, tmp_path / "run", config, [
            "evolution.generations=3", "novelty.enabled=false", "meta.enabled=false"])
    finally:
        server.server.shutdown()
    assert summary.evaluations == 3 and summary.best_score > summary.initial_score
    assert server.prompts and "## Current program" in server.prompts[0]
    store = Store.open(tmp_path / "run")
    [ledger] = store.contexts.ledger()
    assert ledger.model == "tiny" and ledger.prompt_tokens == 100 * ledger.calls
    store.close()
    with pytest.raises(ConfigError, match="did you mean 'jsoncompletion'"):
        start(task, run_dir=tmp_path / "other", config=config,
              overrides=["llm.models=[{provider: jsoncompletions, model: tiny}]"])


def test_the_examples_are_not_stale_text():
    for heading in ("A reply format", "A language", "An LLM provider"):
        (module,) = doc_blocks(heading, "python")
        compile(textwrap.dedent(module), heading, "exec")


def test_a_mutation_intent_plugin_is_scheduled_and_asked(tmp_path, monkeypatch):
    config = install_plugin(tmp_path, monkeypatch, "A mutation intent", "my_intent")
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        summary = run(task, tmp_path / "run", config, [
            "evolution.generations=4", "mutation.types=[double]", "novelty.enabled=false",
            "meta.enabled=false", "llm.models=[" + json.dumps(llm.model_config()) + "]"])
        prompts = [r[-1]["content"] for r in llm.requests if r]
    assert summary.evaluations == 4
    assert all("Double the program's largest numeric setting" in prompt and
               "Here that is VALUE, now" in prompt for prompt in prompts)
    store = Store.open(tmp_path / "run")
    children = [r for r in store.candidates.list("correct") if r.id != 1]
    assert children and all(r.notes["intent"] == "double" for r in children)
    store.close()
    with pytest.raises(ConfigError, match="did you mean 'double'"):
        start(task, run_dir=tmp_path / "other", config=config,
              overrides=["mutation.types=[doubel]"])
