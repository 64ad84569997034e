"""A feature whose optional dependency (extra) is not installed fails before anything is made,
in one line naming the setting, the missing module and the extra that brings it. Real `cambrian`
processes in which the extra's module cannot be imported (as in an install without it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

# Runs the CLI with the named modules unimportable, as if their extra were not installed.
WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # `import name` now raises ImportError, find_spec returns None
from cambrian.cli import main
sys.argv = ["cambrian", *sys.argv[2:]]
main()
"""


def cambrian_without(modules: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT, modules, *args], capture_output=True,
                          text=True, timeout=180, check=False)


def model_sets(llm: ScriptedLLM, *more: str) -> list[str]:
    flat = ["--set", "llm.models=[" + json.dumps(llm.model_config()) + "]"]
    for item in ("meta.enabled=false", "comprehension.enabled=false", *more):
        flat += ["--set", item]
    return flat


@pytest.mark.parametrize(("modules", "settings", "expected"), [
    ("llama_cpp", [], ("llm.models[0] (provider local", "'llama_cpp'", "cambrian[local]")),
    ("sentence_transformers", ["remote", "novelty.enabled=true"],
     ("novelty rejection with the bundled MiniLM", "'sentence_transformers'",
      "cambrian[novelty]", "novelty.enabled: false")),
    ("ray", ["remote", "novelty.enabled=false", "execution.backend=ray"],
     ("execution.backend: ray", "'ray'", "cambrian[ray]")),
    ("mlflow", ["remote", "novelty.enabled=false", "tracking.mlflow.experiment=x"],
     ("tracking.mlflow", "'mlflow'", "cambrian[tracking]")),
    ("wandb", ["remote", "novelty.enabled=false", "tracking.wandb.mode=offline"],
     ("tracking.wandb", "'wandb'", "cambrian[tracking]")),
])
def test_a_missing_extra_is_named_before_the_run_folder_is_made(
        tmp_path: Path, modules: str, settings: list[str], expected: tuple[str, ...]):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as llm:
        sets = model_sets(llm, *settings[1:]) if settings[:1] == ["remote"] else []
        result = cambrian_without(modules, "run", str(task), "-o", str(run_dir), "-g", "1",
                                  *sets)
    assert result.returncode != 0
    message = " ".join(result.stderr.split())  # the console wraps long lines
    for text in expected:
        assert text in message, result.stderr
    assert "Traceback" not in result.stderr
    assert not run_dir.exists()


def test_the_embedder_names_the_extra_when_it_is_used_without_it():
    code = ("import sys; sys.modules['sentence_transformers'] = None\n"
            "from cambrian.core.extras import MissingExtra\n"
            "from cambrian.llm.embeddings import LocalEmbedder\n"
            "try:\n    LocalEmbedder()._load()\n"
            "except MissingExtra as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False).stdout
    assert "needs the Python module 'sentence_transformers'" in out
    assert "pip install 'cambrian[novelty]'" in out


def test_an_api_only_install_runs_with_novelty_off_and_says_so(tmp_path: Path):
    """Novelty rejection is on by default with the `novelty` extra's embeddings; without the
    extra, a run that did not ask for novelty goes on without it, with one warning."""
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as llm:
        result = cambrian_without("sentence_transformers", "run", str(task), "-o", str(run_dir),
                                  "-g", "1", "-q", *model_sets(llm))
    assert result.returncode == 0, result.stderr
    message = " ".join(result.stderr.split())
    assert "novelty rejection is off" in message and "cambrian[novelty]" in message
    stored = (run_dir / "config.yaml").read_text()
    assert "novelty:\n  enabled: false" in stored


@pytest.mark.parametrize("args", [["ui", "RUNS"], ["run", "TASK", "--ui", "-o", "RUN"]])
def test_the_web_ui_names_its_extra(tmp_path: Path, args: list[str]):
    task = write_counter_task(tmp_path / "task")
    (tmp_path / "runs").mkdir()
    paths = {"RUNS": str(tmp_path / "runs"), "TASK": str(task), "RUN": str(tmp_path / "run")}
    result = cambrian_without("fastapi", *(paths.get(a, a) for a in args))
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert "needs the Python module 'fastapi'" in message and "cambrian[ui]" in message
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()
