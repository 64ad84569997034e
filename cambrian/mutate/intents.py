"""Mutation intents (seed 002 §10.1): what a proposal sets out to do, as opposed to the patch
format it replies in. Each intent has its own instruction for the prompt's "Your task" section,
the patch kind it is carried out with, and the search phase it belongs to (seed 002 §10.6:
large exploratory changes versus refinement of what already works).

The seed's "bug fix" type is the engine's ``fix`` kind, used only while no program is correct,
so it is not scheduled here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Phase = Literal["explore", "exploit"]


@dataclass(frozen=True)
class MutationIntent:
    name: str
    kind: str  # patch kind: diff | full | cross
    phase: Phase
    # Weight within its phase, relative to the phase's other intents (seed 002 §10.6:
    # exploitation 0.4 / 0.3 / 0.3, exploration uniform; improve_step, which the seed does not
    # have, weighs like local_fix).
    phase_share: float
    instruction: str


INTENTS: dict[str, MutationIntent] = {
    intent.name: intent
    for intent in (
        MutationIntent(
            "tuning", "diff", "exploit", 0.4,
            "Tune the parameters only: numeric constants, thresholds, iteration counts, weights "
            "and limits. Keep the structure of the algorithm exactly as it is.",
        ),
        MutationIntent(
            "local_fix", "diff", "exploit", 0.3,
            "Pick one function or loop and make it faster or more accurate. Leave the rest of "
            "the program as it is.",
        ),
        MutationIntent(
            "refinement", "diff", "exploit", 0.3,
            "Refine the core algorithm itself (for example how candidate solutions are built, "
            "changed or compared) while keeping the overall approach.",
        ),
        MutationIntent(
            # The framework wires a step after the entry function; the model writes it
            # (cambrian/mutate/improve_step.py builds the instruction from the chosen method).
            "improve_step", "diff", "exploit", 0.3,
            "Write an improvement step that takes the solution the program builds and returns "
            "a better one.",
        ),
        MutationIntent(
            "strategy", "full", "explore", 1.0,
            "Replace the core approach with a different algorithmic strategy that could score "
            "better (another search, construction or optimisation method). Rewrite the code "
            "inside the EVOLVE-BLOCK around that new strategy.",
        ),
        MutationIntent(
            "refactor", "full", "explore", 1.0,
            "Restructure the code inside the EVOLVE-BLOCK: reorganise its data structures and "
            "control flow so that the program is easier to improve further, and improve the "
            "score where the new structure allows it.",
        ),
        MutationIntent(
            "crossover", "cross", "explore", 1.0,
            "Combine the strongest ideas of the current program and the other program shown "
            "into one better program.",
        ),
    )
}


def intent_instruction(name: str) -> str:
    return INTENTS[name].instruction
