"""The `prompt:` section of the run config: what prompts show, and reply budgets."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cambrian.config.strict import StrictModel


class PromptConfig(StrictModel):
    reply_tokens_full: int = Field(
        1536, gt=0,
        description="Reply budget of a full-rewrite proposal, in tokens.",
    )
    reply_tokens_diff: int = Field(
        1024, gt=0,
        description="Reply budget of a diff proposal, in tokens.",
    )
    show_text_feedback: bool = Field(
        True,
        description="Show the evaluator's text feedback (artifacts, errors) of the parent in "
                    "the prompt.",
    )
    max_feedback_chars: int = Field(1500, ge=0, description="Characters of the evaluator's "
                                                            "feedback shown in a prompt.")
    max_guidance_chars: int = Field(
        2000, ge=1,
        description="Characters a person's active guidance (for every prompt, or for one "
                    "candidate or lineage) may hold; a change that would leave more is refused "
                    "where it is made (cambrian guide, the web UI, guidance.md), so earlier "
                    "guidance is never crowded out of the prompt.",
    )
    history_programs: int = Field(
        3, ge=0,
        description="Lineage steps shown with the parent (0: none).",
    )
    tried_ideas: int = Field(
        4, ge=0,
        description="Changes the parent's last children tried without beating it, shown so "
                    "they are not repeated.",
    )
    context_margin_tokens: int = Field(
        64, ge=0,
        description="Tokens kept free in the context window when fitting a prompt.",
    )
    retry_style: Literal["auto", "continue", "restart"] = Field(
        "auto",
        description="After a refused reply: \"continue\" the conversation with the error "
                    "(Reflexion, seed 000 §3.2) or \"restart\" from the original prompt with "
                    "the error noted at its end. \"auto\" restarts for local models, which tend "
                    "to repeat their own refused reply verbatim.",
    )
