"""Peer files recognised by their own keys and translated key by key: OpenEvolve's settings
(models, islands, rewrites, early stopping) and ShinkaEvolve's run_evo.py, read without running
it, alone or beside a shinka*.yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from support.scripted_llm import write_counter_task

from cambrian.api import resolve_config
from cambrian.config import ConfigError, build_config
from cambrian.task.folder import load_task, peer_config, task_config_layer
from cambrian.task.peer_configs import peer_kind

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peer_folders"


def folder(tmp_path: Path, config: dict | None = None, name: str = "config.yaml") -> Path:
    root = write_counter_task(tmp_path / "t")
    if config is not None:
        (root / name).write_text(yaml.safe_dump(config))
    return root


# OpenEvolve's circle_packing_with_artifacts: its own keys and a top-level `novelty:`.
WITH_NOVELTY = {
    "max_iterations": 5, "checkpoint_interval": 10, "log_level": "INFO",
    "diff_based_evolution": False, "early_stopping_patience": 4,
    "early_stopping_metric": "combined_score", "convergence_threshold": 0.001,
    "llm": {"models": [{"name": "qwen-coder", "weight": 0.7},
                       {"name": "qwen-coder-big", "weight": 0.3, "temperature": 0.2}],
            "api_base": "http://localhost:8000/v1", "api_key": "${LOCAL_SERVER_KEY}",
            "temperature": 0.6, "max_tokens": 2048, "timeout": 90},
    "prompt": {"system_message": "Pack 26 circles.", "num_top_programs": 4,
               "num_diverse_programs": 1},
    "database": {"num_islands": 4, "migration_interval": 15, "migration_rate": 0.2,
                 "population_size": 60, "elite_selection_ratio": 0.0},
    "evaluator": {"timeout": 60, "enable_artifacts": True, "parallel_evaluations": 3},
    "novelty": {"enabled": True},
}


def test_a_peer_file_holding_a_key_cambrian_knows_is_still_the_peers(tmp_path: Path):
    assert peer_kind(WITH_NOVELTY) == "OpenEvolve"
    root = folder(tmp_path, WITH_NOVELTY)
    config = resolve_config(root)
    assert config.task.description == "Pack 26 circles."
    note = peer_config(root).note
    assert note.startswith("config.yaml is OpenEvolve's config: used ")
    assert "novelty.*" in note.split("; ignored: ")[1]


def test_a_cambrian_config_with_a_mistyped_section_is_cambrians(tmp_path: Path):
    data = {"evolution": {"generations": 2}, "evaluator": {"timeout": 5}}
    assert peer_kind(data) is None
    root = folder(tmp_path, data)
    with pytest.raises(ConfigError, match="unknown config key 'evaluator'"):
        build_config([task_config_layer(root)])


def test_openevolve_models_islands_rewrites_and_early_stopping(tmp_path: Path):
    config = resolve_config(folder(tmp_path, WITH_NOVELTY))
    first, second = config.llm.models
    # An OpenAI-compatible server: provider openai at its address, the key's variable named.
    assert (first.provider, first.model, first.base_url, first.api_key_env, first.weight) == (
        "openai", "qwen-coder", "http://localhost:8000/v1", "LOCAL_SERVER_KEY", 0.7)
    assert first.temperatures == [0.6] and second.temperatures == [0.2]
    assert first.max_tokens == 2048 and first.timeout_s == 90.0 and second.weight == 0.3
    assert config.database.num_islands == 4 and config.database.migration_interval == 15
    assert config.database.migration_rate == 0.2
    assert config.database.top_k_inspirations == 4 and config.database.archive_inspirations == 1
    assert config.evolution.patch_types == ["full"]  # diff_based_evolution: false
    assert config.evolution.patience == 4 and config.evolution.generations == 5
    assert config.evolution.max_parallel_evaluations == 3
    note = peer_config(folder(tmp_path / "again", WITH_NOVELTY)).note
    used, ignored = note.split("; ignored: ")
    assert "evaluator.enable_artifacts -> honoured (artifacts are always fed back)" in used
    assert "early_stopping_metric -> honoured" in used
    # 0 is no elite ratio Cambrian takes: reported as ignored, never passed on.
    assert "database.elite_selection_ratio" in ignored and "convergence_threshold" in ignored
    assert config.database.elite_ratio == 0.3


def test_every_openevolve_model_is_called_as_openevolve_calls_it(tmp_path: Path):
    data = {"max_iterations": 2, "llm": {"primary_model": "gpt-4o-mini",
                                         "secondary_model": "claude-sonnet-4",
                                         "secondary_model_weight": 0.5,
                                         "api_key": "sk-literal-never-copied"}}
    first, second = resolve_config(folder(tmp_path, data)).llm.models
    assert (first.provider, first.base_url, first.api_key_env) == ("openai", None,
                                                                   "OPENAI_API_KEY")
    assert (second.model, second.weight) == ("claude-sonnet-4", 0.5)
    note = peer_config(folder(tmp_path / "b", data)).note
    assert "sk-literal" not in note and "key in OPENAI_API_KEY" in note


def test_a_shinka_model_of_an_unknown_provider_keeps_cambrians_models(tmp_path: Path):
    data = {"evo_config": {"llm_models": ["bedrock/claude"], "num_generations": 2}}
    config = resolve_config(folder(tmp_path, data, name="shinka.yaml"))
    assert [m.provider for m in config.llm.models] == ["local"]
    assert "evo_config.llm_models" in peer_config(
        folder(tmp_path / "b", data, name="shinka.yaml")).note.split("; ignored: ")[1]


def shinka_script(tmp_path: Path) -> Path:
    return Path(shutil.copytree(PEERS / "shinka_script", tmp_path / "shinka_script"))


def test_shinka_run_script_is_read_without_running_it(tmp_path: Path):
    root = shinka_script(tmp_path)
    config = resolve_config(root)
    assert config.task.description.startswith("You are an expert in simple sums. The best "
                                              "known result for the sum\nis 100")
    assert config.evolution.generations == 4 and config.evaluation.timeout_s == 90.0
    # strategy = "power_law" picks its branch of the if/elif chain, unpacked with **.
    assert config.database.parent_selection == "power_law"
    assert config.database.power_law_alpha == 2.0 and config.database.num_islands == 3
    assert config.llm.selection == "ucb1" and config.evolution.max_parallel_evaluations == 2
    assert config.evolution.patch_type_probs == [0.6, 0.3, 0.1]
    note = peer_config(root).note
    assert note.startswith("run_evo.py is ShinkaEvolve's config: used evo_config.task_sys_msg")
    ignored = note.split("; ignored: ")[1]
    # A bedrock model has no provider here: it is left out, and the report says so.
    assert ("evo_config.llm_models bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0 "
            "(no provider Cambrian knows)") in ignored
    assert "evo_config.results_dir (not readable without running it)" in ignored
    # The partly used section's other keys are each named.
    assert "evo_config.job_type" in ignored and "evo_config.embedding_model" in ignored
    model, = config.llm.models
    assert (model.provider, model.model, model.temperatures, model.max_tokens) == (
        "gemini", "gemini-2.5-flash", [0.0, 0.5, 1.0], 32768)
    task = load_task(root, config)
    assert task.description == config.task.description and task.problem_statement is None
    assert task.notes == (note,)


def test_a_shinka_yaml_beside_run_evo_gets_the_scripts_prompt(tmp_path: Path):
    """ShinkaEvolve's circle_packing: shinka_small.yaml has no task_sys_msg, run_evo.py has."""
    root = shinka_script(tmp_path)
    (root / "shinka_small.yaml").write_text(yaml.safe_dump({
        "max_evaluation_jobs": 1,
        "evo_config": {"num_generations": 7, "llm_models": ["gpt-5-mini", "claude-sonnet-4"],
                       "llm_kwargs": {"temperatures": [0, 0.5]}},
        "db_config": {"num_islands": 1}}))
    config = resolve_config(root)
    assert config.evolution.generations == 7 and config.database.num_islands == 1
    assert config.task.description.startswith("You are an expert in simple sums.")
    assert config.evolution.max_parallel_evaluations == 1
    assert [(m.provider, m.model, m.temperatures, m.api_key_env) for m in config.llm.models] == [
        ("openai", "gpt-5-mini", [0.0, 0.5], "OPENAI_API_KEY"),
        ("anthropic", "claude-sonnet-4", [0.0, 0.5], "ANTHROPIC_API_KEY")]
    assert peer_config(root).note.startswith(
        "shinka_small.yaml + run_evo.py are ShinkaEvolve's config: used ")


def test_a_run_script_that_builds_no_config_is_no_peer_file(tmp_path: Path):
    root = folder(tmp_path)
    (root / "run_evo.py").write_text("import sys\nprint(sys.argv)\n")
    assert peer_config(root) is None


def test_shinka_local_server_models(tmp_path: Path):
    root = folder(tmp_path, {"evo_config": {
        "llm_models": ["local-qwen2.5-coder-http://localhost:11434/v1"],
        "num_generations": 3}}, name="shinka.yaml")
    model, = resolve_config(root).llm.models
    assert (model.provider, model.model, model.base_url) == (
        "openai", "qwen2.5-coder", "http://localhost:11434/v1")


# ShinkaEvolve's lean_math shape: run_evo.py reads shinka_small.yaml itself and sets the task
# prompt on the mapping it read, inside main().
LEAN_SCRIPT = '''
import argparse, os, yaml
from shinka.core import ShinkaEvolveRunner, EvolutionConfig
from shinka.database import DatabaseConfig
from shinka.launch import LocalJobConfig

SYS_MSG = """\\
You are an expert in counters. \\
Raise VALUE."""


def main(config_path):
    task_dir = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(task_dir, config_path)) as f:
        config = yaml.safe_load(f)
    evo_cfg_dict = config["evo_config"]
    evo_cfg_dict["task_sys_msg"] = SYS_MSG
    evo_config = EvolutionConfig(**evo_cfg_dict)
    job_config = LocalJobConfig(eval_program_path=os.path.join(task_dir, "evaluate.py"))
    runner = ShinkaEvolveRunner(evo_config=evo_config, job_config=job_config,
                                max_evaluation_jobs=config.get("max_evaluation_jobs", 1))
    runner.run()


if __name__ == "__main__":
    main(argparse.ArgumentParser().parse_args().config_path)
'''


def test_a_prompt_set_on_a_mapping_the_script_reads_is_taken(tmp_path: Path):
    root = folder(tmp_path, {"evo_config": {"num_generations": 30, "language": "python"},
                             "db_config": {"num_islands": 2}}, name="shinka_small.yaml")
    (root / "run_evo.py").write_text(LEAN_SCRIPT)
    config = resolve_config(root)
    assert config.task.description == "You are an expert in counters. Raise VALUE."
    assert config.evolution.generations == 30
    note = peer_config(root).note
    assert note.startswith("shinka_small.yaml + run_evo.py are ShinkaEvolve's config")
    ignored = note.split("; ignored: ")[1]
    assert "the rest of evo_config (not readable without running it)" in ignored
    assert "job_config.eval_program_path (not readable without running it)" in ignored


def test_openevolves_full_rewrite_share_is_the_patch_mix(tmp_path: Path):
    data = {"max_iterations": 2, "diff_based_evolution": True, "allow_full_rewrites": True,
            "full_rewrite_probability": 0.25}
    config = resolve_config(folder(tmp_path, data))
    assert config.evolution.patch_types == ["diff", "full"]
    assert config.evolution.patch_type_probs == [0.75, 0.25]
    assert "diff_based_evolution, allow_full_rewrites, full_rewrite_probability -> " \
        "evolution.patch_types, evolution.patch_type_probs (diff/full 0.75/0.25)" in \
        peer_config(folder(tmp_path / "b", data)).note
