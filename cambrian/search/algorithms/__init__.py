"""Built-in search algorithms, one module each; ``search/registry.py`` registers them."""

from cambrian.search.algorithms import adaevolve, baselines, evox, gepa, openevolve, shinka

BUILTIN_ALGORITHMS = (shinka.SPEC, openevolve.SPEC, gepa.SPEC, adaevolve.SPEC, evox.SPEC,
                      *baselines.SPECS)
