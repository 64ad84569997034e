"""``shinka.core.run_shinka_eval`` as ShinkaEvolve's evaluators use it."""

from shinka.core.wrap_eval import load_program, run_shinka_eval, save_json_results

__all__ = ["load_program", "run_shinka_eval", "save_json_results"]
