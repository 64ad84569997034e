"""``cambrian bench``: compare search algorithms on task folders over several seeds.

``register(app)`` adds the command to the main typer app; the benchmark modules are imported only
when it runs."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DEFAULT_OUT = Path("runs") / "bench"


HELP = " ".join(["Run", "every", "search", "algorithm", "on", "every", "task", "with", "the", "same", "budget", "and", "models,", "over", "several", "seeds.", "Each", "run", "is", "an", "ordinary", "run", "in", "OUT/runs/<algorithm>/<task>/seed<k>/;", "invoking", "the", "same", "command", "again", "skips", "the", "finished", "runs", "and", "resumes", "an", "interrupted", "one.", "Writes", "OUT/results.json,", "OUT/results.md", "and", "OUT/best_vs_evals.png."])


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


def bench_command(
    search: str = typer.Option(..., "--search", help="Comma-separated search algorithms "
                                                     "(see `cambrian algorithms`)"),
    tasks: str = typer.Option(..., "--tasks", help="Comma-separated task folders"),
    budget: int = typer.Option(..., "--budget", "-b", min=1,
                               help="Evaluated children per run (evolution.generations)"),
    seeds: int = typer.Option(3, "--seeds", "-n", min=1, help="Runs per algorithm and task"),
    out: Path = typer.Option(DEFAULT_OUT, "--out", "-o", help="Folder for the runs and results"),
    overrides: list[str] | None = typer.Option(
        None, "--set", "-s", help="Config override for every run: section.key=value"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display"),
) -> None:
    """``cambrian bench``; its help text is HELP."""
    from cambrian.bench.display import print_results, run_with_progress
    from cambrian.bench.spec import BenchError, BenchSpec, algorithm_variants, split_list
    from cambrian.config import ConfigError
    from cambrian.llm.base import LLMError
    from cambrian.task.folder import TaskError

    spec = BenchSpec(
        variants=tuple(algorithm_variants(split_list(search))),
        task_dirs=tuple(Path(t) for t in split_list(tasks)),
        budget=budget, seeds=seeds, out_dir=out, overrides=tuple(overrides or ()),
    )
    try:
        results = run_with_progress(spec, console, quiet)
    except (BenchError, ConfigError, TaskError, LLMError, FileNotFoundError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print(f"Interrupted. Finished runs are kept; run the same command again to continue "
                  f"(the interrupted run in {out / 'runs'} resumes).")
        raise typer.Exit(code=130)
    print_results(console, results)


def register(app: typer.Typer) -> None:
    app.command("bench", help=HELP)(bench_command)
