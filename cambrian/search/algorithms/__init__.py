"""Built-in search algorithms, one module each; ``search/registry.py`` registers them."""

from cambrian.search.algorithms import (
    adaevolve,
    baselines,
    contest,
    evox,
    gepa,
    niches,
    openevolve,
    shinka,
)

BUILTIN_ALGORITHMS = (shinka.SPEC, openevolve.SPEC, gepa.SPEC, adaevolve.SPEC, evox.SPEC,
                      niches.SPEC, contest.SPEC, *baselines.SPECS)
