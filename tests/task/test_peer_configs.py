"""A peer's config file in a task folder (OpenEvolve's config.yaml, ShinkaEvolve's shinka.yaml)
is recognised and translated; what has no clear meaning is named in one line, never mapped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.scripted_llm import write_counter_task

from cambrian.api import resolve_config
from cambrian.config import ConfigError, build_config
from cambrian.task.folder import load_task, peer_config, task_config_layer

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peer_folders"


def copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(PEERS / name, tmp_path / name))


def test_openevolve_config_is_translated_and_the_rest_named(tmp_path: Path):
    root = copy("openevolve_cascade", tmp_path)
    config = resolve_config(root)
    assert config.task.description.startswith("You are an expert at tuning counters.")
    assert config.evaluation.timeout_s == 30.0
    assert config.evolution.seed == 7 and config.evolution.generations == 3
    assert config.evaluation.cascade == "on"
    assert config.evaluation.cascade_thresholds == [0.5, 0.75]
    # OpenEvolve's Gemini models, called as OpenEvolve calls them: Gemini's OpenAI-compatible
    # endpoint, the key in OPENAI_API_KEY, with their weights.
    gemini = "https://generativelanguage.googleapis.com/v1beta/openai/"
    assert [(m.provider, m.model, m.weight, m.base_url, m.api_key_env)
            for m in config.llm.models] == [
        ("openai", "gemini-2.0-flash-lite", 0.8, gemini, "OPENAI_API_KEY"),
        ("openai", "gemini-2.0-flash", 0.2, gemini, "OPENAI_API_KEY")]
    assert config.llm.models[0].temperatures == [0.7] and config.llm.models[0].max_tokens == 4096
    assert config.database.num_islands == 3 and config.database.archive_size == 20
    assert config.database.top_k_inspirations == 3
    assert config.evolution.max_parallel_evaluations == 2
    note = peer_config(root).note
    assert "\n" not in note and note.startswith("config.yaml is OpenEvolve's config: used ")
    assert "max_iterations -> evolution.generations (3)" in note
    assert ("-> llm.models (gemini-2.0-flash-lite x0.8, gemini-2.0-flash x0.2 at "
            f"{gemini}, key in OPENAI_API_KEY)") in note
    assert "database.population_size, database.exploitation_ratio" in note
    assert "checkpoint_interval" in note


def test_shinka_run_file_is_translated(tmp_path: Path):
    root = copy("shinka_style", tmp_path)
    config = resolve_config(root)
    assert config.task.description.startswith("You are an expert in simple sums.")
    assert config.evaluation.timeout_s == 45.0  # job_config.time "00:00:45"
    assert config.evolution.generations == 2
    assert config.budget.max_cost_usd == 5.0
    assert config.task.initial_program == "initial.py" and config.task.language == "python"
    note = peer_config(root).note
    assert note.startswith("shinka.yaml is ShinkaEvolve's config")
    assert "evo_config.llm_models, evo_config.llm_kwargs" not in note  # no kwargs here
    assert "evo_config.llm_models -> llm.models (openai:gpt-5-mini, gemini:gemini-2.5-flash)" in note
    assert "db_config.num_islands -> database.num_islands (2)" in note
    assert "evo_config.embedding_model" in note.split("; ignored: ")[1]
    assert config.database.num_islands == 2 and config.database.parent_selection == "weighted"
    assert config.evolution.patch_types == ["diff", "full"]
    assert config.evolution.patch_type_probs == [0.6, 0.4]


def test_settings_given_on_top_still_win(tmp_path: Path):
    root = copy("openevolve_cascade", tmp_path)
    config = resolve_config(root, overrides=["evolution.generations=9",
                                             "evaluation.cascade=off"])
    assert config.evolution.generations == 9 and config.evaluation.cascade == "off"


def test_a_cambrian_config_with_a_typo_is_still_an_error(tmp_path: Path):
    root = write_counter_task(tmp_path / "t", config="evolution:\n  generations: 2\n"
                                                     "evaluator:\n  timeout: 5\n")
    assert peer_config(root) is None
    with pytest.raises(ConfigError, match="unknown config key 'evaluator'"):
        build_config([task_config_layer(root)])


def test_task_notes_name_the_peer_config_and_its_prompt_stands_for_the_statement(tmp_path: Path):
    root = copy("openevolve_cascade", tmp_path)
    task = load_task(root, resolve_config(root))
    assert task.initial_path.name == "initial_program.py" and task.contract == "module"
    # The peer's system message is the task paragraph; the evaluator's docstring is not
    # taken as a statement beside it.
    assert task.description.startswith("You are an expert at tuning counters.")
    assert task.problem_statement is None
    assert task.notes == (peer_config(root).note,)


def test_without_a_task_paragraph_the_docstring_is_the_statement(tmp_path: Path):
    root = copy("openevolve_cascade", tmp_path)
    config = resolve_config(root, overrides=["task.description=null"])
    task = load_task(root, config)
    assert task.problem_statement.startswith("Raise the counter: the score is VALUE / 10")
    assert "docstring of evaluator.py is used as the statement" in task.notes[1]


def test_a_readme_is_the_statement_before_any_docstring(tmp_path: Path):
    root = copy("openevolve_cascade", tmp_path)
    (root / "README.md").write_text("# Counter\nMake VALUE large.\n")
    task = load_task(root, resolve_config(root))
    assert task.problem_statement == "# Counter\nMake VALUE large.\n"
    assert not any("docstring" in note for note in task.notes)


def test_a_program_named_init_program_is_found(tmp_path: Path):
    root = write_counter_task(tmp_path / "t")
    (root / "initial.py").rename(root / "init_program.py")
    task = load_task(root, build_config([]))
    assert task.initial_path.name == "init_program.py"


# A folder in the shape of OpenEvolve's circle packing: no config.yaml, but two phases of its
# run file; and of ShinkaEvolve's math problems: several initial_<variant>.py and a README.
PHASE = """max_iterations: {iterations}
llm:
  primary_model: "gemini-2.0-flash-001"
prompt:
  system_message: "Phase {phase}: raise VALUE."
evaluator:
  timeout: {timeout}
  cascade_evaluation: true
  cascade_thresholds: [0.5, 0.75]
"""


def phased_folder(tmp_path: Path) -> Path:
    root = write_counter_task(tmp_path / "phased")
    (root / "config_phase_2.yaml").write_text(PHASE.format(iterations=50, phase=2, timeout=90))
    (root / "config_phase_1.yaml").write_text(PHASE.format(iterations=100, phase=1, timeout=60))
    (root / "meta.yaml").write_text("owner: someone\nbenchmark: counters\n")  # not a run file
    return root


def test_a_peer_run_file_named_otherwise_is_read_and_the_others_named(tmp_path: Path):
    root = phased_folder(tmp_path)
    config = resolve_config(root)
    assert config.task.description == "Phase 1: raise VALUE."
    assert config.evaluation.timeout_s == 60.0 and config.evolution.generations == 100
    assert config.evaluation.cascade == "on"
    note = peer_config(root).note
    assert note.startswith("config_phase_1.yaml is OpenEvolve's config "
                           "(config_phase_2.yaml: not read): used ")
    assert "meta.yaml" not in note
    assert load_task(root, config).notes[0] == note


def test_a_shinka_run_file_of_another_size_is_read(tmp_path: Path):
    root = copy("shinka_style", tmp_path)
    (root / "shinka.yaml").rename(root / "shinka_medium.yaml")
    config = resolve_config(root)
    assert config.evolution.generations == 2 and config.budget.max_cost_usd == 5.0
    assert peer_config(root).note.startswith("shinka_medium.yaml is ShinkaEvolve's config: ")


def test_a_cambrian_config_named_otherwise_is_not_read(tmp_path: Path):
    root = write_counter_task(tmp_path / "t")
    (root / "config_fast.yaml").write_text("evolution:\n  generations: 4\n")
    assert peer_config(root) is None
    assert resolve_config(root).evolution.generations != 4


def test_initial_program_variants_take_the_first_by_name_and_say_so(tmp_path: Path):
    root = write_counter_task(tmp_path / "variants")
    source = (root / "initial.py").read_text()
    (root / "initial.py").unlink()
    (root / "initial_test_time.py").write_text(source)
    (root / "initial_open_evolve.py").write_text(source.replace("VALUE = 1", "VALUE = 2"))
    (root / "initial_scores.json").write_text("[1, 2]\n")  # data, not a program
    (root / "README.md").write_text("# Counter\nMake VALUE large.\n")
    task = load_task(root, build_config([]))
    assert task.initial_path.name == "initial_open_evolve.py"
    assert task.initial_source is not None and "VALUE = 2" in task.initial_source
    assert task.notes == ("2 initial programs in variants: initial_open_evolve.py is used "
                          "(initial_test_time.py not); set task.initial_program to use another",)


def test_a_single_initial_variant_is_used_without_a_note(tmp_path: Path):
    root = write_counter_task(tmp_path / "one")
    (root / "initial.py").rename(root / "initial_alpha_evolve.py")
    task = load_task(root, build_config([]))
    assert task.initial_path.name == "initial_alpha_evolve.py" and task.notes == ()


def test_the_usual_names_still_come_before_variants(tmp_path: Path):
    root = write_counter_task(tmp_path / "both")
    (root / "initial_other.py").write_text((root / "initial.py").read_text())
    task = load_task(root, build_config([]))
    assert task.initial_path.name == "initial.py" and task.notes == ()
