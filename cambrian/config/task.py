"""The `task:` section of the run config: what the task folder holds (name, direction,
language, files; ``cambrian/task/``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cambrian.config.strict import StrictModel


class TaskConfig(StrictModel):
    name: str | None = Field(
        None,
        description="The task's name (runs, trackers and reports show it); default: the task "
                    "folder's name.",
    )
    direction: Literal["maximize", "minimize"] = Field(
        "maximize",
        description="Whether a higher (maximize) or lower (minimize) score is better.",
    )
    language: str | None = Field(
        None,
        description="Language of the program; None: inferred from the initial program's "
                    "extension.",
    )
    initial_program: str | None = Field(
        None,
        description="The initial program's file name inside the task folder; None: "
                    "auto-detected (initial.py, init_program.py...).",
    )
    files: list[str] = Field(
        default_factory=list,
        description="A program of several files: their paths (or globs) inside the task "
                    "folder, in the order prompts show them; the first (or initial_program) "
                    "is the entry the evaluator is given. Files with EVOLVE-BLOCKs evolve, "
                    "the others are shown but fixed (task/program_files.py).",
    )
    evaluator: str | None = Field(
        None,
        description="The evaluator's file name inside the task folder; None: auto-detected "
                    "(evaluate.py, evaluator.py...).",
    )
    problem_statement: str | None = Field(
        None,
        description="The problem statement's file name inside the task folder; None: "
                    "auto-detected (problem.md, README.md...).",
    )
    description: str | None = Field(
        None,
        description="One paragraph shown at the top of every prompt.",
    )
