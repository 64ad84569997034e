"""``database.*`` settings are the shinka algorithm's: with another algorithm a changed one is
an error (it would be silently ignored), named with the algorithms that do read it."""

from __future__ import annotations

import pytest

from cambrian.config import ConfigError, build_config
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
