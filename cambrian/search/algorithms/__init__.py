"""Built-in search algorithms; importing this package registers them."""

from cambrian.search.algorithms import baselines, shinka  # noqa: F401
