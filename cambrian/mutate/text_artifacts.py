"""What the prompts say when the candidate is a text artifact (``Language.text``: a prompt, a
document, a config), not a program: the role, the task of each patch kind and mutation intent,
a strategy proposal's instruction, and the general methods of the strategy menu. A program's
wording speaks of functions, algorithms and speed, which a small model then tries to put into a
prompt.

Intents not listed here (a plugin's) keep their own instruction; the improvement step and the
tuning intent are never offered for a text (no entry function to wire a step to, no numeric
settings found: ``task/knobs.py`` reads code only).
"""

from __future__ import annotations

TASK_INTENT = {
    "diff": "Make one focused change to the text that improves the score.",
    "full": "Rewrite the text with a better approach.",
    "cross": "Combine the strongest ideas of the current text and the other text shown into one "
             "better text.",
    "fix": "The current text fails its evaluation. Fix it so that it can be used as intended.",
}
INTENT_INSTRUCTIONS = {
    "tuning": "Tune the numbers and settings in the text only (counts, limits, thresholds). "
              "Keep its wording as it is.",
    "local_fix": "Pick one sentence or instruction of the text and make it clearer, more "
                 "precise or more complete. Leave the rest of the text as it is.",
    "refinement": "Refine the core instructions of the text (what it asks for, the rules it "
                  "states, the answer format it requires) while keeping its overall approach.",
    "strategy": "Rewrite the text around a different approach that could score better (another "
                "way of explaining the task, other rules, worked examples, a required answer "
                "format, a step-by-step procedure).",
    "refactor": "Restructure the text: reorder and regroup what it says so that it is clearer "
                "and easier to improve further, and improve the score where the new structure "
                "allows it.",
    "crossover": TASK_INTENT["cross"],
}
# The general methods of a strategy proposal for a text read by a model or a person (the menu
# also holds the task's own, ``mutation.strategies``; a config task turns these off with
# ``mutation.general_strategies: false`` and lists its own).
TEXT_STRATEGIES: tuple[str, ...] = (
    "Exact answer format: state exactly what the answer must look like (list the allowed "
    "answers) and that nothing else may be written.",
    "Definitions: define each category or case in one short line, with what tells it apart "
    "from the others.",
    "Worked examples: add two or three short examples (an input and its right answer) that "
    "cover the hardest cases.",
    "Procedure: give a short step-by-step procedure to follow before answering.",
    "Known confusions: name the cases that get confused with each other and say how to tell "
    "them apart.",
    "Shorter: keep only the instructions that matter, each in one plain sentence.",
)


def preamble(language_name: str, better: str) -> str:
    kind = "" if language_name == "text" else f" ({language_name})"
    return (f"You are an expert writer. You improve a text{kind} step by step; each version is "
            f"used and scored ({better} score is better).")


def strategy_instruction(strategy: str) -> str:
    return (f"Build this method into the text: {strategy}\nKeep the parts of the current text "
            "that already work and rewrite the rest around the method.")


def task_text(intent: str | None, kind: str, strategy: str | None) -> str | None:
    """The "Your task" instruction for a text (None: an intent this module does not know,
    whose own instruction stands)."""
    if strategy:
        return strategy_instruction(strategy)
    if intent is None:
        return TASK_INTENT.get(kind)
    return INTENT_INSTRUCTIONS.get(intent)


def blocks_sentence() -> str:
    """The system message's sentence on what may change, for a text with markers."""
    return ("Only the text between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END lines may "
            "change; everything else is fixed.")
