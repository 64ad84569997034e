"""Built-in search algorithms; importing this package registers them."""

from cambrian.search.algorithms import (  # noqa: F401
    adaevolve,
    baselines,
    evox,
    gepa,
    openevolve,
    shinka,
)
