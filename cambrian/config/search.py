"""The `search:` section of the run config: the search algorithm, plugins and the loop's
swappable components."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from cambrian.config.strict import StrictModel


class SearchConfig(StrictModel):
    """Which search algorithm runs (``cambrian run --search NAME``) and its own options."""

    algorithm: str = Field(
        "shinka",
        description="The search algorithm by registered name (cambrian algorithms lists them; "
                    "cambrian run --search NAME).",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="The algorithm's own options (docs: the algorithm zoo); unknown ones are "
                    "an error.",
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="Python modules imported before the run, registering algorithms, "
                    "components, intents, providers or languages.",
    )
    context_builder: str = Field(
        "default",
        description="The loop's other swappable parts, by registered name "
                    "(cambrian/components.py).",
    )
    generator: str = Field(
        "default",
        description="The generator (prompt to child program) by registered name.",
    )
    evaluator: str = Field("default", description="The evaluator component (program to "
                                                  "evaluation result) by registered name.")
