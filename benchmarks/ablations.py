"""The ablations of seed 000 §5 at equal evaluation budgets, over several seeds, with the local
models by default:

  parent selection   weighted sampling vs hill climbing vs best-of-N (``database.parent_selection``)
  LLM selection      UCB1 bandit over the local 1.5B and 0.5B models vs a fixed ensemble of the
                     same two vs the single 1.5B model (``llm.selection``)
  novelty rejection  embedding-based rejection sampling on vs off (``novelty.enabled``)

and the trace analyses fed back into the search (seed 001 §6; ``trace_feedback``):

  deletion filter    children that mostly re-add lines their lineage deleted are rejected
                     (default) vs penalised as parents vs let through (``deletion_filter``)
  deletion history   the parent's lineage deletions shown in the prompt vs not
                     (``deletion_history_in_prompt``)
  tune operator      off (default) vs on: every 10 evaluated children one generation is a
                     Bayesian-optimisation step on the best untuned program (``tune_operator``).
                     Its trial evaluations count against the budget like children do, so
                     every variant spends the same number of evaluations

``weighted`` is the shared reference: Shinka's defaults (weighted parents, novelty rejection on,
deletion filter rejecting, deletion history on, tune operator off, the default local 1.5B
model), so it is also the "novelty on", "filter on", "history on" and "tune off" arm.

  .venv/bin/python benchmarks/ablations.py [--task examples/circle_packing] [--budget 20]
      [--seeds 3] [--only weighted,hill_climb] [--out benchmarks/results/ablations/]
      [--set llm.models='[{provider: openai, model: gpt-4.1-mini}]' ...]

How long it takes with the local models (circle packing, 2 CPU cores shared with other work):
about a minute per evaluated child with the 1.5B model when the cores are free (measured: 4
children in 4.3 min, 9 LLM calls of ~27 s, failed patches and novelty rejections included), and
several times that under load (measured with the 1.5B + 0.5B bandit at a load average of 4: 2
children in 22 min, 11 calls of 3-240 s, including the run's opening call on the problem). The
0.5B model is not much faster per call on this machine. The default grid is 11 variants × 3
seeds × 20 children = 660 evaluations: about 11 hours on idle cores (scaled from the figures
above), a day or more on busy ones. ``--budget 10 --seeds 2`` (220 evaluations) takes about 4
hours on idle cores, and one comparison group alone (e.g. ``--only
weighted,hill_climb,best_of_n``) 3/11 of that. The script can
be killed at any time: running the same command again skips the finished runs and resumes the
interrupted one.

``--set`` overrides apply to every run, over the variants' own settings: ``--set llm.models=...``
replaces the models everywhere, the LLM ensemble variants included (give those at least two).
Writes ``results.json``, ``results.md`` and ``best_vs_evals.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from cambrian.bench.display import print_results, run_with_progress
from cambrian.bench.spec import BenchError, BenchSpec, Variant, split_list
from cambrian.config import ConfigError
from cambrian.llm.base import LLMError
from cambrian.llm.model_files import QWEN25_CODER_05B, QWEN25_CODER_15B
from cambrian.task.folder import TaskError

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TASK = REPO / "examples" / "circle_packing"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "ablations"

# Every variant runs Shinka's search; the ablations change one setting of it at a time.
# The tune operator is off in every variant but ``tune_on`` (circle packing's config turns it on).
BASE_OVERRIDES: tuple[str, ...] = ("search.algorithm=shinka", "trace_feedback.tune_operator=false")

TWO_LOCAL_MODELS = (f"llm.models=[{{provider: local, model: {QWEN25_CODER_15B.name}}}, "
                    f"{{provider: local, model: {QWEN25_CODER_05B.name}}}]")

# name -> overrides. One line adds an ablation.
ABLATIONS: dict[str, tuple[str, ...]] = {
    "weighted": ("database.parent_selection=weighted",),
    "hill_climb": ("database.parent_selection=hill_climb",),
    "best_of_n": ("database.parent_selection=best_of_n",),
    "llm_bandit": (TWO_LOCAL_MODELS, "llm.selection=ucb1"),
    "llm_fixed": (TWO_LOCAL_MODELS, "llm.selection=fixed"),
    "llm_single": (TWO_LOCAL_MODELS, "llm.selection=single"),
    "novelty_off": ("novelty.enabled=false",),
    "deletion_filter_off": ("trace_feedback.deletion_filter=off",),
    "deletion_filter_penalise": ("trace_feedback.deletion_filter=penalise",),
    "deletion_history_off": ("trace_feedback.deletion_history_in_prompt=false",),
    "tune_on": ("trace_feedback.tune_operator=true",),
}


def ablation_variants(only: list[str] | None = None) -> list[Variant]:
    names = only or list(ABLATIONS)
    unknown = [n for n in names if n not in ABLATIONS]
    if unknown:
        raise BenchError(f"unknown ablation(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(ABLATIONS)}")
    return [Variant(name, (*BASE_OVERRIDES, *ABLATIONS[name])) for name in names]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="\n\n".join(__doc__.split("\n\n")[:2]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", type=Path, default=DEFAULT_TASK, help="task folder")
    parser.add_argument("--budget", type=int, default=20, help="evaluated children per run")
    parser.add_argument("--seeds", type=int, default=3, help="runs per variant")
    parser.add_argument("--only", default="", help=f"comma-separated subset of: "
                                                   f"{', '.join(ABLATIONS)}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for runs and results")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="config override for every run (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(soft_wrap=True)
    try:
        spec = BenchSpec(variants=tuple(ablation_variants(split_list(args.only))),
                         task_dirs=(args.task,), budget=args.budget, seeds=args.seeds,
                         out_dir=args.out, overrides=tuple(args.overrides))
        results = run_with_progress(spec, console, args.quiet)
    except (BenchError, ConfigError, TaskError, LLMError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Interrupted. Run the same command again to continue.", file=sys.stderr)
        return 130
    print_results(console, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
