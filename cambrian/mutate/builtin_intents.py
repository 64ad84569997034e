"""The mutation intents Cambrian ships besides the improvement step (seed 002 §10.1, §10.5,
§10.6): tuning, local_fix and refinement exploit what works; strategy, refactor and crossover
explore. Phase shares are the seed's (exploitation 0.4 / 0.3 / 0.3, exploration uniform), base
temperatures its §10.5 table ("parameter_tune" 0.3, "local_fix" 0.4, "algorithm_refine" 0.6,
"strategy_change" 0.9, "major_refactor" 0.8, "crossover" 0.7). The seed's "bug fix" type is the
engine's ``fix`` kind, used only while no program is correct, so it is no intent here."""

from __future__ import annotations

from dataclasses import dataclass

from cambrian.lang.language import Language
from cambrian.mutate.intent import IntentServices, MutationIntent
from cambrian.mutate.tuning_targets import tuning_target_lines, tuning_targets_text


@dataclass(frozen=True)
class TuningIntent(MutationIntent):
    """Changes numeric settings only: offered for parents that hold some, and its prompt lists
    them (a small model asked to tune a program without settings sends it back unchanged, or
    invents a parameter)."""

    def usable(self, parent_id: int, services: IntentServices) -> bool:
        if services.language is None:
            return True
        found = services.cache(self.name)
        if parent_id not in found:
            found[parent_id] = bool(tuning_target_lines(
                services.view(parent_id).source, services.language, limit=1))
        return bool(found[parent_id])

    def task_text(self, source: str, language: Language, *, given_score: str | None = None,
                  strategy: str | None = None, focus: str | None = None) -> str:
        text = super().task_text(source, language, strategy=strategy, focus=focus)
        targets = tuning_targets_text(source, language)
        return text + "\n" + targets if targets else text


TUNING = TuningIntent(
    "tuning", "diff", "exploit", 0.4,
    "Tune the parameters only: numeric constants, thresholds, iteration counts, weights "
    "and limits. Keep the structure of the algorithm exactly as it is.", temperature=0.3)
LOCAL_FIX = MutationIntent(
    "local_fix", "diff", "exploit", 0.3,
    "Pick one function or loop and make it faster or more accurate. Leave the rest of "
    "the program as it is.", temperature=0.4, focused=True)
REFINEMENT = MutationIntent(
    "refinement", "diff", "exploit", 0.3,
    "Refine the core algorithm itself (for example how candidate solutions are built, "
    "changed or compared) while keeping the overall approach.", temperature=0.6, focused=True)
STRATEGY = MutationIntent(
    "strategy", "full", "explore", 1.0,
    "Replace the core approach with a different algorithmic strategy that could score "
    "better (another search, construction or optimisation method). Rewrite the code "
    "inside the EVOLVE-BLOCK around that new strategy.", temperature=0.9, draws_method=True)
REFACTOR = MutationIntent(
    "refactor", "full", "explore", 1.0,
    "Restructure the code inside the EVOLVE-BLOCK: reorganise its data structures and "
    "control flow so that the program is easier to improve further, and improve the "
    "score where the new structure allows it.", temperature=0.8)
CROSSOVER = MutationIntent(
    "crossover", "cross", "explore", 1.0,
    "Combine the strongest ideas of the current program and the other program shown "
    "into one better program.", temperature=0.7)

BUILTIN_INTENTS = (TUNING, LOCAL_FIX, REFINEMENT, STRATEGY, REFACTOR, CROSSOVER)
