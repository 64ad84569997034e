"""What a benchmark runs: variants (a search algorithm or a named set of overrides) × task
folders × seeds, each cell one ordinary run with the same evaluation budget."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from cambrian.api import resolve_config
from cambrian.config import ConfigError, parse_override
from cambrian.search.registry import get_algorithm, load_plugins
from cambrian.task.folder import load_task

DEFAULT_CHECKPOINTS: tuple[float, ...] = (0.25, 0.5, 1.0)
# Keys the benchmark sets itself, so that every run of a grid gets the same budget and its seed.
OWNED_KEYS: tuple[tuple[str, str], ...] = (("evolution", "generations"), ("evolution", "seed"))
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


class BenchError(ValueError):
    """A benchmark that cannot run as asked, phrased for the person who asked."""


@dataclass(frozen=True)
class Variant:
    """One arm of the comparison: a name (a directory name too) and the overrides it applies."""

    name: str
    overrides: tuple[str, ...] = ()


def algorithm_variants(names: list[str]) -> list[Variant]:
    """One variant per search algorithm (``--search a,b,c``)."""
    return [Variant(name, (f"search.algorithm={name}",)) for name in names]


@dataclass(frozen=True)
class BenchSpec:
    variants: tuple[Variant, ...]
    task_dirs: tuple[Path, ...]
    budget: int  # evaluated children per run (evolution.generations)
    seeds: int  # runs per (variant, task), with evolution.seed = 0 .. seeds-1
    out_dir: Path
    # Applied to every run, over each variant's own overrides (e.g. to choose the models).
    overrides: tuple[str, ...] = ()
    checkpoints: tuple[float, ...] = DEFAULT_CHECKPOINTS


@dataclass(frozen=True)
class TaskInfo:
    name: str
    direction: str
    task_dir: Path


@dataclass(frozen=True)
class BenchCell:
    variant: Variant
    task: TaskInfo
    seed: int
    run_dir: Path
    overrides: tuple[str, ...]  # the full list a new run starts with


@dataclass(frozen=True)
class BenchPlan:
    spec: BenchSpec
    tasks: tuple[TaskInfo, ...]
    cells: tuple[BenchCell, ...] = field(default_factory=tuple)


def split_list(text: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def run_dir_for(out_dir: Path, variant: str, task: str, seed: int) -> Path:
    return Path(out_dir) / "runs" / variant / task / f"seed{seed}"


def run_overrides(spec: BenchSpec, variant: Variant, seed: int) -> tuple[str, ...]:
    return (*variant.overrides, *spec.overrides,
            f"evolution.generations={spec.budget}", f"evolution.seed={seed}")


def _check_owned_keys(overrides: tuple[str, ...], origin: str) -> None:
    for text in overrides:
        parsed = parse_override(text)
        for section, key in OWNED_KEYS:
            value = parsed.get(section)
            if isinstance(value, dict) and key in value:
                flag = "--budget" if key == "generations" else "--seeds"
                raise BenchError(f"{origin} sets {section}.{key} ('{text}'); the benchmark sets it "
                                 f"for every run (use {flag})")


def _check_spec(spec: BenchSpec) -> None:
    if not spec.variants:
        raise BenchError("no variants to compare")
    if not spec.task_dirs:
        raise BenchError("no task folders given")
    if spec.budget < 1:
        raise BenchError(f"the budget must be at least 1 evaluation, got {spec.budget}")
    if spec.seeds < 1:
        raise BenchError(f"at least one seed is needed, got {spec.seeds}")
    if any(not 0 < f <= 1 for f in spec.checkpoints):
        raise BenchError(f"checkpoints are fractions of the budget in (0, 1]: {spec.checkpoints}")
    names = [v.name for v in spec.variants]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BenchError(f"variant names must be unique; repeated: {', '.join(repeated)}")
    for name in names:
        if not _SAFE_NAME.match(name):
            raise BenchError(f"variant name '{name}' cannot name a directory; use letters, digits "
                             "and . _ + -")
    _check_owned_keys(spec.overrides, "--set")
    for variant in spec.variants:
        _check_owned_keys(variant.overrides, f"variant '{variant.name}'")


def _task_info(task_dir: Path, overrides: tuple[str, ...]) -> TaskInfo:
    config = resolve_config(task_dir, overrides=list(overrides))
    task = load_task(task_dir, config)
    return TaskInfo(name=task.name, direction=task.direction, task_dir=Path(task_dir))


def _validate_variant(task_dir: Path, overrides: tuple[str, ...]) -> None:
    """Fail before any run starts: a bad key, value or algorithm name would otherwise surface only
    when that variant's turn comes, possibly hours into the benchmark."""
    config = resolve_config(task_dir, overrides=list(overrides))
    load_plugins(config.search.plugins)
    get_algorithm(config.search.algorithm)
    load_task(task_dir, config)


def plan_bench(spec: BenchSpec) -> BenchPlan:
    """Check the whole grid (raising BenchError, ConfigError or TaskError) and lay out its runs.

    Cells are ordered seed by seed, so an interrupted benchmark has compared every variant on the
    first seeds before it starts the later ones."""
    _check_spec(spec)
    tasks = tuple(_task_info(Path(d), spec.overrides) for d in spec.task_dirs)
    task_names = [t.name for t in tasks]
    for name in task_names:
        if "/" in name or "\\" in name or name in (".", ".."):
            raise BenchError(f"task name '{name}' cannot name a directory; set task.name")
    clashing = sorted({n for n in task_names if task_names.count(n) > 1})
    if clashing:
        raise BenchError(f"two task folders share the name {', '.join(clashing)}; give them "
                         "distinct folder names or task.name values")
    for variant in spec.variants:
        for task in tasks:
            try:
                _validate_variant(task.task_dir, run_overrides(spec, variant, 0))
            except ConfigError as exc:
                raise ConfigError(
                    f"variant '{variant.name}' on task '{task.name}': {exc}") from None
    cells = tuple(
        BenchCell(variant=variant, task=task, seed=seed,
                  run_dir=run_dir_for(spec.out_dir, variant.name, task.name, seed),
                  overrides=run_overrides(spec, variant, seed))
        for seed in range(spec.seeds)
        for task in tasks
        for variant in spec.variants
    )
    return BenchPlan(spec=spec, tasks=tasks, cells=cells)
