"""Self-reflection (seed 004 §10.10): every ``reflection.interval`` evaluations an LLM reads the
run's own statistics (``reflection_stats.py``: success per mutation intent, model, strategy
niche and phase, the best score's trajectory, the commonest failures) and recommends how the
search should go on, one line each:

    1. FAVOUR refinement: it beat the parent most often
    2. AVOID rewriting the whole program: most rewrites fail
    3. TRY caching the distances between points

The reply is parsed strictly (a reply without one usable line fails the step, and the loop
backs off); the reflection is stored as a ``reflection`` event through the recorder. Its ideas
to try and things to avoid reach later mutation prompts (``reflection.per_prompt`` of them each,
after the scratchpad's, so a prompt too tight for both keeps the scratchpad's); a favour or
avoid naming an intent weighs the schedule's draw (the hook's ``steer``: 2 favoured, 0.5
avoided), also read with ``cambrian.store.reflections.latest_reflection(store).intent_weights()``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from cambrian.config import RunConfig
from cambrian.config.reflection import ReflectionConfig
from cambrian.core.events import AVOID, FAVOUR, TRY, Event, Recommendation, Reflection
from cambrian.core.hooks import LoopHook, Steering, StepFailed
from cambrian.core.objective import Objective
from cambrian.llm.base import GenerationParams, LLMRequest, Message
from cambrian.llm.gateway import LLMGateway
from cambrian.meta.reflection_stats import summarise
from cambrian.store.recorder import Recorder
from cambrian.store.reflections import latest_reflection

MAX_TEXT = 200  # characters of one recommendation
MAX_PROBLEM = 300  # characters of the problem statement the prompt shows
TEMPERATURE = 0.4  # seed 004 §10.10
_ACTIONS = {"FAVOUR": FAVOUR, "FAVOR": FAVOUR, "AVOID": AVOID, "STOP": AVOID, "TRY": TRY}
_LINE = re.compile(r"^\s*(?P<mark>\d+\s*[.)]\s*|[-*]\s+)?\**\s*"
                   r"(?P<word>FAVOUR|FAVOR|AVOID|STOP|TRY)\b\**\s*[:\-]?\s*(?P<rest>.*\S)?",
                   re.IGNORECASE)
# The format lines of the prompt, which a small model may copy as they are.
_PLACEHOLDERS = ("<intent>: <why>", "<what to stop doing>: <why>",
                 "<a concrete change to the program>")


def parse_reflection(text: str, intents: Sequence[str], limit: int) -> list[Recommendation]:
    """The recommendations of a reply, at most ``limit``: lines starting (after a number or a
    bullet) with FAVOUR, AVOID (or STOP) or TRY, in capitals unless the line is numbered or
    bulleted; every other line is ignored. A line whose text starts with one of ``intents``
    ("local_fix", "local fix") names that intent (a TRY naming one favours it)."""
    known = sorted({name.lower() for name in intents}, key=len, reverse=True)
    found: list[Recommendation] = []
    for line in text.splitlines():
        match = _LINE.match(line)
        # A keyword in lower case counts on a numbered or bulleted line only (not in prose).
        if not match or not (match["mark"] or match["word"].isupper()):
            continue
        rest = (match["rest"] or "").strip(" *")
        if len(rest) < 3 or rest in _PLACEHOLDERS:
            continue
        action = _ACTIONS[match["word"].upper()]
        intent = _named_intent(rest, known)
        if intent is not None and action == TRY:  # "TRY local_fix": use that intent more
            action = FAVOUR
        recommendation = Recommendation(action, rest[:MAX_TEXT], intent)
        if recommendation not in found:
            found.append(recommendation)
    return found[:limit]


def _named_intent(text: str, known: Sequence[str]) -> str | None:
    words = re.sub(r"[\s-]+", "_", text.lower().lstrip("`'\"*")) + " "
    return next((name for name in known
                 if words.startswith(name) and not words[len(name)].isalnum()), None)


def reflection_grammar(intents: Sequence[str], limit: int) -> str:
    """GBNF for local models: 1 to ``limit`` numbered FAVOUR / AVOID / TRY lines."""
    favour = ' | "FAVOUR " intent ": " text' if intents else ""
    lines = [f'root ::= rec{{1,{limit}}}',
             'rec ::= [1-9] ". " body "\\n"',
             f'body ::= "AVOID " text | "TRY " text{favour}',
             'text ::= [^\\n]{3,120}']
    if intents:
        lines.append("intent ::= " + " | ".join(f'"{name}"' for name in intents))
    return "\n".join(lines)


class SelfReflection(LoopHook):
    """A loop hook: a reflection every ``interval`` evaluations, its ideas sampled into the
    mutation prompts after it."""

    name = "self-reflection"
    blocks_proposals = True  # the next prompts should see its recommendations

    def __init__(self, config: ReflectionConfig, gateway: LLMGateway, recorder: Recorder,
                 model_label: str, objective: Objective, *, budget: int,
                 intents: Sequence[str] = (), problem: str = "") -> None:
        self.config = config
        self.gateway = gateway
        self.recorder = recorder
        self.store = recorder.store
        self.model_label = model_label
        self.objective = objective
        self.budget = budget
        self.intents = list(intents)  # those the schedule draws from (none: schedule off)
        self.problem = " ".join(problem.split())[:MAX_PROBLEM]
        self.latest: Reflection | None = latest_reflection(self.store)  # a resumed run's
        self.last_problem = ""  # why the last reflection stored nothing

    def due(self, evaluated: int) -> bool:
        done = self.latest.evaluated if self.latest else 0
        return evaluated - done >= self.config.interval

    def prompt_notes(self, rng: Any) -> tuple[str, ...]:
        """``reflection.per_prompt`` of the latest reflection's ideas, drawn at random."""
        pool = self.latest.prompt_notes() if self.latest else []
        take = min(self.config.per_prompt, len(pool))
        picks = rng.choice(len(pool), size=take, replace=False) if take else []
        return tuple(pool[int(i)] for i in sorted(picks))

    def steer(self, rng: Any) -> Steering | None:
        """The latest reflection's favoured and avoided intents weigh the schedule's draw."""
        weights = self.latest.intent_weights() if self.latest else {}
        return Steering(intent_weights=weights) if weights else None

    async def step(self, evaluated: int) -> list[Event]:
        """A reflection; one that got no usable recommendation fails (the loop backs off)."""
        if await self.reflect(evaluated) is None:
            raise StepFailed(self.last_problem or "no recommendations")
        return []

    def prompt(self, summary: str) -> str:
        previous = ""
        if self.latest is not None:
            previous = ("\n\n## Your previous recommendations (after "
                        f"{self.latest.evaluated} evaluations)\n" + "\n".join(
                            f"{i}. {r.action.upper()} {r.text}"
                            for i, r in enumerate(self.latest.items(), 1)))
        task = f"## The task\n{self.problem}\n\n" if self.problem else ""
        favour = (f"N. FAVOUR <intent>: <why>   (intents: {', '.join(self.intents)})\n"
                  if self.intents else "")
        return (
            "You review an evolutionary search that improves a program: each step asks an LLM "
            "for one change and keeps the programs that score better.\n\n"
            f"{task}## The run so far\n{summary}{previous}\n\n"
            "Recommend how the search should go on. Reply with 1 to "
            f"{self.config.max_recommendations} numbered lines, each one of:\n{favour}"
            "N. AVOID <what to stop doing>: <why>\n"
            "N. TRY <a concrete change to the program>\n"
            "Nothing else.")

    async def reflect(self, evaluated: int) -> Reflection | None:
        """The stored reflection, or None (``last_problem`` says why)."""
        self.last_problem = ""
        summary = summarise(self.store, self.objective, evaluated=evaluated, budget=self.budget,
                            window=self.config.interval)
        text = summary.render()
        request = LLMRequest(
            (Message("user", self.prompt(text)),),
            GenerationParams(temperature=TEMPERATURE, max_tokens=self.config.max_tokens,
                             grammar=reflection_grammar(self.intents,
                                                        self.config.max_recommendations)))
        call = await self.gateway.call("reflection", self.model_label, request)
        if call.response is None:
            self.last_problem = call.skipped or call.error or "the call failed"
            return None
        found = parse_reflection(call.response.text, self.intents,
                                 self.config.max_recommendations)
        if not found:
            self.last_problem = "the reply held no FAVOUR, AVOID or TRY line"
            return None
        reflection = Reflection(
            evaluated=evaluated, summary=text,
            recommendations=[{"action": r.action, "text": r.text, "intent": r.intent}
                             for r in found],
            statistics=summary.as_dict(), model=self.model_label, context_id=call.context_id)
        self.recorder.emit(reflection)
        self.latest = reflection
        return reflection


def build_reflection(config: RunConfig, gateway: LLMGateway, recorder: Recorder,
                     objective: Objective, problem: str = "") -> SelfReflection | None:
    if not config.reflection.enabled:
        return None
    intents = list(config.mutation.types) if config.mutation.schedule != "off" else []
    return SelfReflection(
        config.reflection, gateway, recorder,
        gateway.label(config.reflection.model, "reflection.model"), objective,
        budget=config.evolution.generations, intents=intents, problem=problem)
