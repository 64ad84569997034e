"""The `judge:` section of a task's config.yaml: how a judged (contest-style) task is compiled,
run on test cases, scored and aggregated (seed 002 §10.7, seed 004 §10.7).

A judged task has no evaluator script. Instead it names a language, where its test cases come
from (a seeded generator ``python gen.py SEED`` or folders of case files), a scorer, and the
public and private case sets. Only public cases are ever run during evolution; private cases
are held out for the generalization report (seed 001 B.7, seed 000 §4.3).

Example::

    judge:
      language: cpp
      generator: gen.py
      scorer: score.py
      public_seeds: [0, 19]        # inclusive range; or a list of ranges [[0, 9], [20, 29]]
      private_seeds: [1000, 1049]
      time_limit_s: 1.0
      memory_limit_mb: 512
      aggregation: mean_minus_std
      std_penalty: 0.1
      tiers: {quick_cases: 4, quick_threshold: 0.9}
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cambrian.core.objective import Objective
from cambrian.lang.languages import language_by_name, registered_languages

# The name of a registered language with a judge toolchain (cambrian/lang/: python, cpp, rust,
# or one a plugin registers); checked when the judge is built.
JudgeLanguage = str
Direction = Literal["maximize", "minimize"]
CASE_FILE_SUFFIX = ".in"


class JudgeConfigError(ValueError):
    """The judge section cannot be used as written."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TierConfig(_Strict):
    """Tiered evaluation (seed 002 §10.7 "Fast Evaluation", seed 004 "Tiered Evaluation")."""

    quick_cases: int = Field(
        5, ge=1,
        description="The quick stage runs the first `quick_cases` public cases.",
    )
    quick_threshold: float = Field(
        0.9, gt=0, le=1,
        description="A candidate goes on to the full public set when its quick-stage score is "
                    "at most (1 - quick_threshold) * |best's quick score| worse than the "
                    "current best's quick score, i.e. for a positive maximised score: quick "
                    ">= quick_threshold * best_quick.",
    )


class RemoteConfig(_Strict):
    """An HTTP scorer (a contest server) used as the expensive last stage (seed 004)."""

    url: str = Field(description="The http:// or https:// address of the scorer service.")
    send: Literal["program", "outputs"] = Field(
        "program",
        description="What to POST: the program's source, or its outputs on the public cases.",
    )
    min_interval_s: float = Field(1.0, ge=0, description="Seconds between two requests to the "
                                                         "scorer service (retries included).")
    max_attempts: int = Field(
        4, ge=1,
        description="Requests tried per program before the remote stage fails.",
    )
    timeout_s: float = Field(30.0, gt=0, description="Seconds one request may take.")
    initial_backoff_s: float = Field(
        1.0, ge=0,
        description="Wait before the first retry, doubled after each failed request.",
    )
    max_backoff_s: float = Field(30.0, ge=0, description="The longest wait between two "
                                                         "attempts, in seconds; also caps a "
                                                         "server's Retry-After.")
    token_env: str | None = Field(
        None,
        description="Name of an environment variable holding a bearer token, if the server "
                    "needs one.",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
        return url


SeedRanges = list[tuple[int, int]]


def _parse_seed_ranges(value: Any) -> SeedRanges:
    """``[0, 49]`` -> [(0, 49)]; ``[[0, 9], [20, 29]]`` -> two ranges. Bounds are inclusive."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        pairs = [value]
    elif isinstance(value, (list, tuple)) and value and all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in value
    ):
        pairs = list(value)
    else:
        raise ValueError(
            "seeds must be an inclusive range [first, last] or a list of ranges "
            f"[[first, last], ...], got {value!r}"
        )
    ranges: SeedRanges = []
    for first, last in pairs:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (first, last)):
            raise ValueError(f"seed bounds must be integers, got {[first, last]!r}")
        if first < 0 or last < first:
            raise ValueError(f"seed range [{first}, {last}] must satisfy 0 <= first <= last")
        ranges.append((first, last))
    return ranges


def expand_seeds(ranges: SeedRanges | None) -> list[int]:
    seeds: list[int] = []
    for first, last in ranges or []:
        seeds.extend(s for s in range(first, last + 1) if s not in seeds)
    return seeds


class JudgeConfig(_Strict):
    language: JudgeLanguage = Field(
        description="Language of the program judged: a registered language with a judge "
                    "toolchain (python, cpp, rust, or a plugin's).",
    )
    generator: str = Field(
        "gen.py",
        description="Used when seeds are given: `python gen.py SEED` -> one case.",
    )
    public_seeds: SeedRanges | None = Field(
        None,
        description="Generator seeds of the public cases, run during evolution: an inclusive "
                    "range [first, last] or a list of ranges.",
    )
    private_seeds: SeedRanges | None = Field(
        None,
        description="Generator seeds of the held-out cases, never run during evolution "
                    "(cambrian generalization scores them).",
    )
    public_cases: str | None = Field(
        None,
        description="Folder of case files (``*.in``, else every file).",
    )
    private_cases: str | None = Field(
        None,
        description="Folder of held-out case files (instead of private_seeds).",
    )
    scorer: str = Field(
        "score.py",
        description="`python score.py INPUT OUTPUT` printing {\"score\": x} or {\"error\": "
                    "\"...\"}, or a module defining score(input_text, output_text) returning "
                    "the same (or a bare number).",
    )
    scorer_mode: Literal["auto", "script", "function"] = Field(
        "auto",
        description="How the scorer is called: script (python score.py INPUT OUTPUT), "
                    "function (score(input_text, output_text)), or auto (function when the "
                    "module defines score).",
    )
    time_limit_s: float = Field(
        2.0, gt=0,
        description="CPU time per case (whole seconds, rounded up).",
    )
    wall_time_limit_s: float | None = Field(
        None, gt=0,
        description="Wall-time limit per case, in seconds; None: 2 * time_limit_s + 1.",
    )
    memory_limit_mb: int = Field(
        1024, gt=0,
        description="Memory limit of the program on one case, in MB.",
    )
    max_output_bytes: int = Field(
        4_000_000, ge=1_000,
        description="Output a program may write on one case; more is an output-limit verdict.",
    )
    compile_timeout_s: float = Field(
        120.0, gt=0,
        description="Wall-time limit of one compilation, in seconds.",
    )
    generator_timeout_s: float = Field(
        60.0, gt=0,
        description="Wall-time limit of the generator making one case, in seconds.",
    )
    scorer_timeout_s: float = Field(
        60.0, gt=0,
        description="Wall-time limit of the scorer on one case, in seconds.",
    )
    aggregation: Literal["mean", "mean_minus_std"] = Field(
        "mean",
        description="How per-case scores become the program's score: their mean, or mean - "
                    "std_penalty * std.",
    )
    std_penalty: float = Field(
        0.1, ge=0,
        description="The λ of mean - λ·std when aggregation is mean_minus_std (seed 002 §10.7).",
    )
    direction: Direction | None = Field(
        None,
        description="maximize or minimize the judged score; None: the task's direction.",
    )
    max_parallel_cases: int = Field(2, ge=1, description="Cases of one program run at once.")
    require_all_accepted: bool = Field(
        True,
        description="A program is correct only when every case is accepted; false scores a "
                    "failed case as failed_case_score instead.",
    )
    failed_case_score: float | None = Field(
        None,
        description="Score of a failed case when require_all_accepted is false; default 0 "
                    "(maximize only).",
    )
    tiers: TierConfig | None = Field(
        None,
        description="Tiered evaluation: a quick stage on the first public cases before the "
                    "full set; None runs every case.",
    )
    remote: RemoteConfig | None = Field(
        None,
        description="An HTTP scorer used as the expensive last stage; None: none.",
    )

    @field_validator("language")
    @classmethod
    def _registered_language(cls, value: str) -> str:
        """A registered language with a judge toolchain (a plugin's registers when its module
        is imported; ``search.plugins`` are imported before the config is validated)."""
        try:
            language = language_by_name(value)
        except KeyError:
            language = None
        if language is None or language.toolchain is None:
            usable = sorted(lang.name for lang in registered_languages() if lang.toolchain)
            raise ValueError(f"no judge toolchain for language {value!r}; one of "
                             f"{', '.join(usable)}")
        return language.name

    @field_validator("public_seeds", "private_seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        return None if value is None else _parse_seed_ranges(value)

    @model_validator(mode="after")
    def _check_case_sets(self) -> JudgeConfig:
        if (self.public_seeds is None) == (self.public_cases is None):
            raise ValueError("give exactly one of public_seeds (with a generator) or public_cases")
        if self.private_seeds is not None and self.private_cases is not None:
            raise ValueError("give at most one of private_seeds or private_cases")
        overlap = set(expand_seeds(self.public_seeds)) & set(expand_seeds(self.private_seeds))
        if overlap:
            shown = sorted(overlap)[:5]
            raise ValueError(f"private_seeds overlap public_seeds (e.g. {shown}); "
                             "held-out cases must differ from the public ones")
        if self.public_cases is not None and self.public_cases == self.private_cases:
            raise ValueError("public_cases and private_cases name the same folder")
        return self

    def resolved_direction(self, task_direction: str) -> Direction:
        direction = self.direction or task_direction
        if direction not in ("maximize", "minimize"):
            raise JudgeConfigError(f"direction must be maximize or minimize, got {direction!r}")
        return direction  # type: ignore[return-value]

    def resolved_failed_case_score(self, objective: Objective) -> float:
        if self.failed_case_score is not None:
            return self.failed_case_score
        if not objective.maximize and not self.require_all_accepted:
            raise JudgeConfigError(
                "judge.failed_case_score must be set for a minimize task when "
                "require_all_accepted is false (0 would be the best possible score)"
            )
        return 0.0

    @property
    def wall_limit_s(self) -> float:
        return self.wall_time_limit_s or 2 * self.time_limit_s + 1


def parse_judge_config(data: dict[str, Any]) -> JudgeConfig:
    """Validate a raw `judge:` mapping, with errors phrased for the config's author."""
    try:
        return JudgeConfig.model_validate(data)
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            where = ".".join(str(p) for p in ("judge", *error["loc"]))
            if error["type"] == "extra_forbidden":
                lines.append(f"unknown config key '{where}'")
            else:
                lines.append(f"{where}: {error['msg']}")
        raise JudgeConfigError("invalid judge configuration:\n  " + "\n  ".join(lines)) from None


# ----------------------------------------------------------------------------- case sets


@dataclass(frozen=True)
class CaseRef:
    """One test case: a generator seed or a case file. `case_id` is what feedback shows."""

    case_id: str
    seed: int | None = None
    file: Path | None = None


def _folder_cases(folder: Path) -> list[CaseRef]:
    if not folder.is_dir():
        raise JudgeConfigError(f"case folder {folder} does not exist")
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    inputs = [p for p in files if p.suffix == CASE_FILE_SUFFIX] or files
    if not inputs:
        raise JudgeConfigError(f"case folder {folder} holds no case files")
    return [CaseRef(case_id=p.name, file=p.resolve()) for p in inputs]


def _seed_cases(ranges: SeedRanges) -> list[CaseRef]:
    return [CaseRef(case_id=f"seed-{seed}", seed=seed) for seed in expand_seeds(ranges)]


@dataclass(frozen=True)
class JudgeTask:
    """A judge section resolved against its task folder: absolute paths and case lists."""

    root: Path
    config: JudgeConfig
    direction: Direction
    generator_path: Path | None
    scorer_path: Path
    public: tuple[CaseRef, ...]
    private: tuple[CaseRef, ...]

    @property
    def objective(self) -> Objective:
        return Objective.of(self.direction)

    @property
    def private_paths(self) -> tuple[Path, ...]:
        """Where the held-out case files are: their folder (expected outputs may lie beside
        them), or the files alone when that folder is the task folder itself."""
        files = [case.file for case in self.private if case.file is not None]
        folders = {file.parent for file in files}
        return tuple(sorted(files if self.root in folders else folders))


def resolve_judge_task(task_dir: Path, config: JudgeConfig, task_direction: str) -> JudgeTask:
    root = Path(task_dir).resolve()
    scorer = root / config.scorer
    if not scorer.is_file():
        raise JudgeConfigError(
            f"judge.scorer names '{config.scorer}', which is not a file in {root}"
        )
    uses_seeds = config.public_seeds is not None or config.private_seeds is not None
    generator = root / config.generator if uses_seeds else None
    if generator is not None and not generator.is_file():
        raise JudgeConfigError(
            f"judge.generator names '{config.generator}', which is not a file in {root}"
        )
    public = (_seed_cases(config.public_seeds) if config.public_seeds is not None
              else _folder_cases(root / str(config.public_cases)))
    private: list[CaseRef] = []
    if config.private_seeds is not None:
        private = _seed_cases(config.private_seeds)
    elif config.private_cases is not None:
        private = _folder_cases(root / config.private_cases)
    return JudgeTask(
        root=root,
        config=config,
        direction=config.resolved_direction(task_direction),
        generator_path=generator,
        scorer_path=scorer,
        public=tuple(public),
        private=tuple(private),
    )
