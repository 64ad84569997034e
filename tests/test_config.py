from __future__ import annotations

from pathlib import Path

import pytest

from cambrian.config import ConfigError, build_config, parse_override, read_config_file

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_defaults_are_valid_and_offline():
    config = build_config([])
    assert config.llm.models[0].provider == "local"
    assert config.database.parent_selection == "weighted"


@pytest.mark.parametrize(
    "layer, expected",
    [
        ({"evolution": {"generatons": 5}}, "unknown config key 'evolution.generatons'; did you mean 'generations'?"),
        ({"evoluton": {}}, "unknown config key 'evoluton'; did you mean 'evolution'?"),
        ({"llm": {"models": [{"temprature": [0.5]}]}}, "unknown config key 'llm.models.0.temprature'; did you mean 'temperatures'?"),
        ({"database": {"num_island": 3}}, "did you mean 'num_islands'?"),
    ],
)
def test_unknown_key_names_the_closest_valid_key(layer, expected):
    with pytest.raises(ConfigError) as info:
        build_config([layer])
    assert expected in str(info.value)


def test_unknown_key_without_close_match_lists_valid_keys():
    with pytest.raises(ConfigError) as info:
        build_config([{"evaluation": {"zzzzzz": 1}}])
    message = str(info.value)
    assert "did you mean" not in message
    assert "timeout_s" in message and "memory_limit_mb" in message


def test_invalid_values_are_reported_with_their_path():
    with pytest.raises(ConfigError, match="evolution"):
        build_config([{"evolution": {"patch_types": ["diff"], "patch_type_probs": [0.5, 0.5]}}])
    with pytest.raises(ConfigError, match="database.num_islands"):
        build_config([{"database": {"num_islands": 0}}])
    with pytest.raises(ConfigError, match="parent_selection"):
        build_config([{"database": {"parent_selection": "greedy"}}])


def test_override_values_are_typed():
    assert parse_override("evolution.generations=30") == {"evolution": {"generations": 30}}
    assert parse_override("database.migration_rate=0.25") == {"database": {"migration_rate": 0.25}}
    assert parse_override("database.island_elitism=false") == {"database": {"island_elitism": False}}
    assert parse_override("evolution.patch_types=[diff, full]") == {
        "evolution": {"patch_types": ["diff", "full"]}}
    with pytest.raises(ConfigError):
        parse_override("evolution.generations")


def test_precedence_task_then_file_then_overrides():
    config = build_config(
        [{"evolution": {"generations": 5, "seed": 1}}, {"evolution": {"generations": 7}}],
        ["evolution.seed=9"],
    )
    assert config.evolution.generations == 7
    assert config.evolution.seed == 9


def test_config_file_errors_are_clear(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("evolution: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_config_file(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        read_config_file(listy)
    with pytest.raises(ConfigError, match="cannot read"):
        read_config_file(tmp_path / "missing.yaml")


def test_duplicate_model_labels_are_rejected():
    with pytest.raises(ConfigError, match="unique"):
        build_config([{"llm": {"models": [{"model": "a"}, {"model": "a"}]}}])


def test_model_replicas_need_a_local_model_and_the_ray_backend():
    from cambrian.search.build import check_names

    assert build_config([]).llm.models[0].replicas == 1
    with pytest.raises(ConfigError, match=r"llm\.models\.0\.replicas: .*provider 'openai' is not "
                                          r"local"):
        build_config([{"llm": {"models": [{"provider": "openai", "model": "m", "replicas": 2}]}}])
    with pytest.raises(ConfigError, match=r"llm\.models\.0\.replicas: .*greater than or equal"):
        build_config([{"llm": {"models": [{"replicas": 0}]}}])
    replicated = {"llm": {"models": [{"model": "qwen2.5-coder-0.5b-instruct", "replicas": 2}]}}
    with pytest.raises(ConfigError) as info:  # checked before a run folder is made
        check_names(build_config([replicated]))
    assert str(info.value) == ("llm.models[0].replicas: 2 replicas run on Ray workers; set "
                               "execution.backend: ray (or replicas: 1)")
    check_names(build_config([replicated, {"execution": {"backend": "ray"}}]))


def test_an_improvement_step_without_any_move_is_refused():
    build_config([{"mutation": {"general_moves": False}}])  # the model derives the moves
    with pytest.raises(ConfigError) as info:
        build_config([{"mutation": {"general_moves": False, "derive_moves": False}}])
    assert "mutation.improve_moves is empty" in str(info.value)


@pytest.mark.parametrize("example", ["circle_packing", "tsp_tour", "heuristic_contest"])
def test_the_examples_name_moves_that_fit_their_solutions(example: str):
    config = build_config([read_config_file(EXAMPLES / example / "config.yaml")])
    assert not config.mutation.general_moves and len(config.mutation.improve_moves) == 3


@pytest.mark.parametrize("example", ["circle_packing", "heuristic_contest"])
def test_the_examples_turn_the_improvement_step_on(example: str):
    """It is on by default (issue 31) and the examples keep listing it; the contest with its
    own score."""
    config = build_config([read_config_file(EXAMPLES / example / "config.yaml")])
    assert "improve_step" in config.mutation.types and "improve_step" in build_config(
        []).mutation.types
    assert (config.mutation.improve_score is not None) == (example == "heuristic_contest")
