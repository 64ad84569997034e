"""The `decomposition:` section (seed 004 §10.2-10.3, §10.10): sub-problems of a task, each a
set of its test cases with its own population and share of the proposals, their best
sub-solutions combined, and strategies that win in one offered to the others. The loop part is
`cambrian/search/decomposition.py`."""

from __future__ import annotations

from pydantic import Field, model_validator

from cambrian.config.strict import StrictModel


class SubproblemConfig(StrictModel):
    name: str = Field(
        min_length=1,
        description="Name of the sub-problem (unique within decomposition.subproblems).",
    )
    cases: list[str] = Field(
        min_length=1,
        description="Test-case ids of this sub-problem (fnmatch patterns over the ids an "
                    "evaluator reports in extra[\"cases\"], a judged task's case ids among "
                    "them).",
    )
    importance: float = Field(
        1.0, gt=0,
        description="Seed 004 §10.2's weight of its improvement potential.",
    )
    description: str = Field("", description="What distinguishes its cases (shown to the model).")


class DecompositionConfig(StrictModel):
    subproblems: list[SubproblemConfig] = Field(
        default_factory=list,
        description="The sub-problems, each a set of the task's test cases; empty: no "
                    "decomposition (at least two when given).",
    )
    population: int = Field(5, ge=1, description="Programs kept per sub-problem (its "
                                                 "leaders).")
    temperature: float = Field(
        0.1, gt=0,
        description="Seed 004 §10.2: softmax over improvement potentials; lower is greedier.",
    )
    steer_share: float = Field(
        0.5, ge=0, le=1,
        description="Share of proposals steered to a sub-problem (the rest are the search's "
                    "own).",
    )
    combiner: str | None = Field(
        None,
        description="A file of the task folder with `combine(sources: dict[str, str]) -> "
                    "str`: one program from each sub-problem's best (run contained, like any "
                    "task code). Without one, a crossover of the two leaders is proposed to "
                    "the model instead.",
    )
    combine_every: int = Field(6, ge=1, description="Evaluations between two combinations of "
                                                    "the leaders.")
    propose: bool = Field(
        False,
        description="When no sub-problems are declared: once the initial program is evaluated, "
                    "the model groups its test cases into sub-problems (from the problem "
                    "statement and the program's result on each case); on with --search "
                    "contest.",
    )
    model: str | None = Field(
        None,
        description="Label of the llm.models entry that proposes the sub-problems (default: "
                    "the first model).",
    )
    max_subproblems: int = Field(4, ge=2, le=8, description="Most sub-problems proposed.")
    max_tokens: int = Field(400, ge=50, le=4000,
                            description="Reply tokens of the proposal call.")

    @model_validator(mode="after")
    def _check(self) -> DecompositionConfig:
        names = [sub.name for sub in self.subproblems]
        if len(set(names)) != len(names):
            raise ValueError("decomposition.subproblems: two sub-problems share a name")
        if len(self.subproblems) == 1:
            raise ValueError("decomposition.subproblems: one sub-problem is no decomposition; "
                             "list at least two")
        return self
