"""The `trace_feedback:` section of the run config: what the trace analyses feed back into the
search (deletion filter, deletion history, tune step)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from cambrian.config.strict import StrictModel


class TraceFeedbackConfig(StrictModel):
    """What the trace analyses feed back into the search (seed 001 §6: keep the search from
    re-doing discarded work; cycling §5.2, B.6, B.8; tuning gap §5.4, B.9). See
    ``cambrian/search/recycling.py`` and ``cambrian/search/tune_step.py``.

    ``deletion_filter``: a child more than ``reintroduction_threshold`` of whose added lines are
    lines its lineage already deleted is ``reject``-ed (stored as ``rejected``, never evaluated;
    after ``max_rejections`` in one generation the proposal is kept anyway) or ``penalise``-d
    (evaluated, but whenever the selector draws it as a parent the draw is repeated with
    probability ``penalty``). Fixes of a failing parent are never filtered.
    ``tune_operator``: every ``tune_every`` evaluated children one generation is a ``tune`` step
    instead of an LLM proposal: the best correct program not tuned before gets its numeric knobs
    tuned by Bayesian optimisation through the task's own evaluator (``tune_budget`` trial
    evaluations, plus one at the defaults; trials count towards ``evolution.generations``
    like children, and a step never takes more than what is left of it), and the tuned program
    becomes the child when it scores better than its parent."""

    deletion_filter: Literal["off", "penalise", "reject"] = Field(
        "reject",
        description="What happens to a child re-adding lines its lineage deleted: reject it, "
                    "penalise it as a parent, or off.",
    )
    reintroduction_threshold: float = Field(
        0.5, ge=0, lt=1,
        description="Share of a child's added lines that its lineage deleted before, above "
                    "which the deletion filter acts.",
    )
    max_rejections: int = Field(2, ge=0, description="Rejections by the deletion filter in "
                                                     "one generation, after which the "
                                                     "proposal is kept.")
    penalty: float = Field(
        0.5, ge=0, le=1,
        description="Probability that a penalised child drawn as a parent is drawn again.",
    )
    deletion_history_in_prompt: bool = Field(
        True,
        description="The parent's lineage deletions as a prompt note.",
    )
    deletion_history_lines: int = Field(
        12, ge=1, le=100,
        description="Lines of the deletion history shown in the prompt.",
    )
    tune_operator: bool = Field(
        False,
        description="Every tune_every children, tune the best untuned program's numeric knobs "
                    "by Bayesian optimisation instead of an LLM proposal.",
    )
    tune_every: int = Field(10, ge=1, description="Evaluated children between two tune steps.")
    tune_budget: int = Field(
        8, ge=2, le=64,
        description="B.9 uses 24 per program; one step is smaller.",
    )

    @field_validator("deletion_filter", mode="before")
    @classmethod
    def _yaml_switch(cls, value: Any) -> Any:
        # YAML reads an unquoted `off` as false (and `on` as true).
        return {False: "off", True: "reject"}.get(value, value) if isinstance(value, bool) else value
