"""The command line for the common cases: one model from flags, early stops, --version, help
texts a user can read (no type labels, no paper section numbers). Real `cambrian` processes
against the scripted OpenAI-compatible server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from typer.testing import CliRunner

import cambrian
from cambrian.cli import app
from cambrian.store.store import Store

CLI = [sys.executable, "-m", "cambrian"]
QUIET = ["--set", "novelty.enabled=false", "--set", "meta.enabled=false",
         "--set", "comprehension.enabled=false"]
TYPE_LABEL = re.compile(r"<(bool|int|float|str|path|text|list\[[a-z]+\]|[a-z]+ range)>")


def cambrian_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "COLUMNS": "120", **(env or {})})


def test_version():
    result = cambrian_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"cambrian {cambrian.__version__}"


def test_help_texts_have_no_type_labels_and_no_paper_sections():
    top = cambrian_cli("--help")
    run = cambrian_cli("run", "--help")
    assert top.returncode == run.returncode == 0
    for flag in ("--model", "--api-base", "--api-key-env", "--target-score", "--patience"):
        assert flag in run.stdout
    assert "KEY=VALUE" in run.stdout and "TASK_DIR" in run.stdout
    commands = [["run"], ["resume"], ["status"], ["best"], ["algorithms"], ["init"], ["show"],
                ["guide"], ["ui"], ["report"], ["generalization"], ["bench"], ["trace"]]
    trace = CliRunner().invoke(app, ["trace", "--help"]).output
    commands += [["trace", name] for name in re.findall(r"│ (\w+)\s{2,}", trace)]
    assert ["trace", "stats"] in commands and ["trace", "tune"] in commands
    listing = CliRunner().invoke(app, ["algorithms"], terminal_width=200)
    assert listing.exit_code == 0 and "shinka" in listing.output
    texts = {"cambrian --help": top.stdout, "cambrian run --help": run.stdout,
             "cambrian algorithms": listing.output}
    for command in commands:
        result = CliRunner().invoke(app, [*command, "--help"], terminal_width=120)
        assert result.exit_code == 0, (command, result.output)
        texts[" ".join(command)] = result.output
    for name, text in texts.items():
        assert not TYPE_LABEL.search(text), (name, TYPE_LABEL.search(text))
        assert "§" not in text and not re.search(r"seed 00\d", text), name


def test_model_flags_and_a_target_score(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        result = cambrian_cli("run", str(task), "-o", str(tmp_path / "run"), "-g", "30", "-q",
                              "--model", "scripted", "--api-base", llm.base_url,
                              "--api-key-env", "SCRIPTED_KEY", "--target-score", "4", *QUIET,
                              env={"SCRIPTED_KEY": "not-a-real-key-123"})
        assert llm.requests, "the flags' model served the run"
    assert result.returncode == 0, result.stderr
    assert "Stopped: target score reached (best" in result.stdout
    with Store.open(tmp_path / "run") as store:
        info = store.runs.info()
    model = info.config["llm"]["models"]
    assert [(m["provider"], m["model"], m["base_url"], m["api_key_env"]) for m in model] == [
        ("openai", "scripted", llm.base_url, "SCRIPTED_KEY")]
    assert info.config["evolution"]["target_score"] == 4.0
    status = cambrian_cli("status", str(tmp_path / "run"))
    assert "[target_reached]" in status.stdout


def test_a_target_given_on_resume(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        first = cambrian_cli("run", str(task), "-o", str(tmp_path / "run2"), "-g", "2", "-q",
                             "--model", "scripted", "--api-base", llm.base_url, *QUIET)
        assert first.returncode == 0, first.stderr
        calls = len(llm.requests)
        resumed = cambrian_cli("resume", str(tmp_path / "run2"), "-g", "10", "-q",
                               "--target-score", "1")
        assert len(llm.requests) == calls  # the best already beats the target
    assert resumed.returncode == 0, resumed.stderr
    assert "Stopped: target score reached" in resumed.stdout


def test_patience_stops_with_exit_code_0(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def worse(messages, index):  # correct children, each below the initial program
        return f"Lower it\n```python\nVALUE = {-index - 1}\n```\n"

    with ScriptedLLM(worse) as llm:
        result = cambrian_cli("run", str(task), "-o", str(tmp_path / "run"), "-g", "20", "-q",
                              "--model", "scripted", "--api-base", llm.base_url,
                              "--patience", "3", *QUIET,
                              "--set", "evolution.patch_types=[full]",
                              "--set", "evolution.patch_type_probs=[1.0]",
                              "--set", "mutation.schedule=off")
    assert result.returncode == 0, result.stderr
    assert "Stopped: no better score in the last" in result.stdout


def test_flag_combinations_that_make_no_sense_are_refused(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    no_model = cambrian_cli("run", str(task), "--api-base", "http://127.0.0.1:9/v1")
    assert no_model.returncode == 2 and "--api-base need --model" in no_model.stderr
    both = cambrian_cli("run", str(task), "--model", "m", "--api-base", "http://127.0.0.1:9/v1",
                        "--set", "llm.models=[{provider: local}]")
    assert both.returncode == 2 and "not both" in both.stderr
    local_key = cambrian_cli("run", str(task), "--model", "qwen2.5-coder-0.5b-instruct",
                             "--api-key-env", "KEY")
    assert local_key.returncode == 2 and "takes no --api-key-env" in local_key.stderr
    assert not (tmp_path / "runs").exists()
    for result in (no_model, both, local_key):
        assert "Traceback" not in result.stderr


def test_init_shows_how_to_use_an_api_model(tmp_path: Path):
    result = cambrian_cli("init", str(tmp_path / "new"))
    assert result.returncode == 0
    assert "--model gpt-4o-mini" in result.stdout and "--api-base" in result.stdout
