"""`cambrian config show TASK [-c FILE] [--set k=v]`: the effective configuration, each value
with where it came from, run as a user runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from support.scripted_llm import write_counter_task

WITHOUT = """
import sys
for name in filter(None, sys.argv[1].split(",")):
    sys.modules[name] = None  # as if the module's extra were not installed
from cambrian.cli import main
sys.argv = ["cambrian", *sys.argv[2:]]
main()
"""


def show(*args: str, without: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT, without, "config", "show", *args],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, **env})


def settings(output: str) -> dict[str, tuple[str, str]]:
    """key -> (value, source) of each printed line."""
    found = {}
    for line in output.splitlines():
        match = re.match(r"^(\S+): (.*?)\s+# (.*)$", line)
        if match:
            found[match.group(1)] = (match.group(2), match.group(3))
    return found


def test_each_value_names_its_layer(tmp_path: Path):
    task = write_counter_task(tmp_path / "task",
                              config="evolution:\n  generations: 7\n  seed: 1\n")
    given = tmp_path / "run.yaml"
    given.write_text("evolution:\n  seed: 2\nllm:\n  models:\n    - provider: openai\n"
                     "      model: remote-one\n      base_url: ${CAMBRIAN_TEST_URL}\n")
    result = show(str(task), "-c", str(given), "--set", "evaluation.timeout_s=12",
                  CAMBRIAN_TEST_URL="http://127.0.0.1:1/v1")
    assert result.returncode == 0, result.stderr
    found = settings(result.stdout)
    assert found["evolution.generations"] == ("7", f"task config {task / 'config.yaml'}")
    assert found["evolution.seed"] == ("2", f"file {given}")  # -c is above the task's
    assert found["evaluation.timeout_s"] == ("12.0", "--set evaluation.timeout_s=12")
    assert found["llm.models[0].model"] == ("remote-one", f"file {given}")
    # the reference is shown, never the value
    assert found["llm.models[0].base_url"] == (
        "${CAMBRIAN_TEST_URL}", f"file {given} (a ${{VAR}} reference)")
    assert "127.0.0.1:1" not in result.stdout
    assert found["llm.models[0].weight"][1] == "default"  # a key the file left out
    assert found["database.num_islands"][1] == "default"
    changed = settings(show(str(task), "-c", str(given), "--changed",
                            CAMBRIAN_TEST_URL="x").stdout)
    assert "database.num_islands" not in changed and "evolution.seed" in changed


def test_a_default_changed_by_the_configuration_is_derived(tmp_path: Path):
    """Novelty rejection is on by default but off without its extra: shown as derived."""
    task = write_counter_task(tmp_path / "task")
    found = settings(show(str(task), "--set",
                          'llm.models=[{"provider": "openai", "model": "m"}]',
                          without="sentence_transformers").stdout)
    assert found["novelty.enabled"] == ("false", "derived")
    assert found["llm.models[0].model"] == ("m", '--set llm.models=[{"provider": "openai", '
                                                 '"model": "m"}]')


def test_a_peer_config_is_named_as_translated(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", config=(
        "max_iterations: 9\nllm:\n  primary_model: gpt-4o\n  api_base: http://127.0.0.1:1/v1\n"))
    result = show(str(task))
    assert result.returncode == 0, result.stderr
    found = settings(result.stdout)
    assert found["evolution.generations"] == (
        "9", f"task config {task / 'config.yaml'} (OpenEvolve's, translated)")


def test_bad_input_is_one_line(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    unknown = show(str(task), "--set", "evolution.generatoins=3")
    assert unknown.returncode == 2
    assert "did you mean 'generations'" in " ".join(unknown.stderr.split())
    assert "Traceback" not in unknown.stderr
    missing = show(str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no such task folder" in missing.stderr
    unset = tmp_path / "unset.yaml"
    unset.write_text("task:\n  description: ${CAMBRIAN_TEST_NEVER_SET}\n")
    failed = show(str(task), "-c", str(unset))
    assert failed.returncode == 2
    assert "CAMBRIAN_TEST_NEVER_SET is not set" in " ".join(failed.stderr.split())
