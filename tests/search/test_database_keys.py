"""``database.*`` settings are the shinka algorithm's: with another algorithm one given is an
error (it would be silently ignored), named with the algorithms that do read it."""

from __future__ import annotations

import pytest

from cambrian.config import ConfigError, DatabaseConfig, build_config
from cambrian.search.build import check_names
from cambrian.search.registry import make_selector


def test_a_database_key_the_algorithm_ignores_is_an_error():
    config = build_config([{"search": {"algorithm": "openevolve"},
                            "database": {"parent_selection": "hill_climb", "num_islands": 3}}])
    with pytest.raises(ConfigError, match=r"database.parent_selection has no effect with search "
                                          r"algorithm 'openevolve' \(only shinka read"):
        make_selector(config)


def test_the_keys_every_algorithm_shares_and_shinkas_own_are_accepted():
    make_selector(build_config([{"search": {"algorithm": "openevolve"},
                                 "database": {"num_islands": 3}}]))
    make_selector(build_config([{"database": {"parent_selection": "hill_climb",
                                              "migration_interval": 4}}]))


def test_a_new_run_refuses_an_ignored_key_even_at_its_default_value():
    """What a new run's configuration says is known, so a key the algorithm does not read is
    refused even at its default; a resumed run's configuration is stored whole (every key at
    some value), so only a changed one counts there."""
    default = DatabaseConfig().archive_size
    config = build_config([{"search": {"algorithm": "hill-climb"},
                            "database": {"archive_size": default}}])
    make_selector(config)  # as for a resumed run: unchanged from the default
    with pytest.raises(ConfigError, match=r"database.archive_size has no effect"):
        check_names(config, new_run=True)
    stored = build_config([config.model_dump(mode="json")])
    check_names(stored)
