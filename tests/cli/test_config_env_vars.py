"""``${VAR}`` and ``${VAR:-default}`` in configuration files: substituted when the run's
configuration is built, an unset variable named with its file, and the reference (never the
value) kept in everything the run stores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.config import ConfigError, build_config, read_config_file, stored_form
from cambrian.config.env_vars import substitute

CLI = [sys.executable, "-m", "cambrian.cli"]


def test_references_defaults_and_escapes():
    env = {"HOST": "example.org", "EMPTY": "", "GENS": "12"}
    data = {"a": "http://${HOST}:8080/${PATH_PART:-v1}", "b": "${EMPTY:-fallback}",
            "c": ["$${HOST} stays", "${GENS}"], "d": 3}
    out, templates = substitute(data, env)
    assert out == {"a": "http://example.org:8080/v1", "b": "fallback",
                   "c": ["${HOST} stays", "12"], "d": 3}
    # an escaped text is kept as written too, so that reading it again gives the same text
    assert templates == {("a",): data["a"], ("b",): data["b"], ("c", 0): "$${HOST} stays",
                         ("c", 1): "${GENS}"}


def test_an_unset_variable_is_one_line_naming_it_and_its_file(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("CAMBRIAN_TEST_UNSET", raising=False)
    path = tmp_path / "run.yaml"
    path.write_text("evolution:\n  generations: 4\ntask:\n  description: ${CAMBRIAN_TEST_UNSET}\n")
    with pytest.raises(ConfigError) as caught:
        build_config([read_config_file(path)])
    message = str(caught.value)
    assert "CAMBRIAN_TEST_UNSET is not set" in message and str(path) in message
    assert "task.description" in message and "\n" not in message
    path.write_text("task:\n  description: ${not a name}\n")
    with pytest.raises(ConfigError, match="not a variable reference"):
        build_config([read_config_file(path)])


def test_an_unset_variable_in_a_set_names_the_set(monkeypatch):
    monkeypatch.delenv("CAMBRIAN_TEST_UNSET", raising=False)
    with pytest.raises(ConfigError, match=r"CAMBRIAN_TEST_UNSET is not set, but in --set "
                                          r"task\.description refers"):
        build_config([], ["task.description=${CAMBRIAN_TEST_UNSET}"])


def test_a_layer_read_from_a_file_dumps_as_yaml_again(tmp_path: Path):
    path = tmp_path / "run.yaml"
    path.write_text("task:\n  description: ${CAMBRIAN_TEST_TEXT:-x}\n")
    assert yaml.safe_dump(read_config_file(path)) == (
        "task:\n  description: ${CAMBRIAN_TEST_TEXT:-x}\n")


def test_a_number_is_validated_and_stored_as_its_value_a_text_as_its_reference(monkeypatch):
    monkeypatch.setenv("CAMBRIAN_TEST_GENS", "7")
    monkeypatch.setenv("CAMBRIAN_TEST_TEXT", "a secret-ish paragraph")
    config = build_config([{"evolution": {"generations": "${CAMBRIAN_TEST_GENS}"},
                            "task": {"description": "${CAMBRIAN_TEST_TEXT}"}}])
    assert config.evolution.generations == 7
    assert config.task.description == "a secret-ish paragraph"
    stored = stored_form(config)
    assert stored["evolution"]["generations"] == 7
    assert stored["task"]["description"] == "${CAMBRIAN_TEST_TEXT}"
    config.task.description = "changed since"  # a later change is stored as it is
    assert stored_form(config)["task"]["description"] == "changed since"


def test_a_run_stores_the_reference_and_resume_substitutes_it_again(tmp_path: Path):
    """The model's address comes from a variable: the run reaches the model through it, and
    neither the store nor config.yaml holds the value."""
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    config = tmp_path / "models.yaml"
    config.write_text(
        "llm:\n  models:\n    - provider: openai\n      model: scripted\n"
        "      base_url: ${CAMBRIAN_TEST_LLM_URL}\n      context_window: 16384\n"
        "novelty:\n  enabled: ${CAMBRIAN_TEST_NOVELTY:-false}\n"
        "meta:\n  enabled: false\ncomprehension:\n  enabled: false\n")
    with ScriptedLLM(incrementing) as llm:
        env = {**os.environ, "CAMBRIAN_TEST_LLM_URL": llm.base_url}
        first = subprocess.run([*CLI, "run", str(task), "-o", str(run_dir), "-g", "2", "-q",
                                "-c", str(config)], env=env, capture_output=True, text=True,
                               timeout=180, check=False)
        assert first.returncode == 0, first.stderr
        stored = yaml.safe_load((run_dir / "config.yaml").read_text())
        assert stored["llm"]["models"][0]["base_url"] == "${CAMBRIAN_TEST_LLM_URL}"
        assert stored["novelty"]["enabled"] is False
        for path in run_dir.rglob("*"):
            if path.is_file():
                assert llm.base_url.encode() not in path.read_bytes(), path
        again = subprocess.run([*CLI, "resume", str(run_dir), "-q", "--set",
                                "evolution.generations=3"], env=env, capture_output=True,
                               text=True, timeout=180, check=False)
        assert again.returncode == 0, again.stderr
        unset = {k: v for k, v in env.items() if k != "CAMBRIAN_TEST_LLM_URL"}
        missing = subprocess.run([*CLI, "resume", str(run_dir), "-q", "--set",
                                  "evolution.generations=4"], env=unset, capture_output=True,
                                 text=True, timeout=180, check=False)
    assert missing.returncode != 0
    message = " ".join(missing.stderr.split())
    assert "CAMBRIAN_TEST_LLM_URL is not set" in message and "Traceback" not in message
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert llm.base_url.encode() not in path.read_bytes(), path
