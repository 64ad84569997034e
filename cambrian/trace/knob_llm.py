"""Knob identification with one LLM call (seed 001 B.9): the model lists tunable numeric
constants with intervals; each proposal is then validated against the program.

As in B.9 there is no retry: an unusable reply yields no knobs and the caller falls back to the
deterministic finder. Validation keeps a proposal only if its literal occurs exactly once among
the program's code literals and sits on the proposed context line; its default is read from the
literal itself, its kind follows the literal's syntax (an integer literal stays an integer), and
the B.9 range rules are enforced on its interval.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cambrian.lang.languages import as_language
from cambrian.llm.base import GenerationParams, LLMError, LLMProvider, LLMRequest, Message
from cambrian.task.knobs import (
    MAX_KNOBS,
    Knob,
    enforce_rules,
    literal_sites,
    literal_value,
    locate,
)

KNOB_SYSTEM_PROMPT = f"""You find the numeric constants of a heuristic optimisation program that
are worth tuning with Bayesian optimisation, and give each a search interval.

Worth tuning: solver tolerances and convergence thresholds; iteration, restart and sample
budgets; step sizes, perturbation scales, learning rates; soft penalty or reward weights;
cooling or annealing rates; thresholds that switch between two strategies.
Not worth tuning (leave out): problem constants such as the instance size, dimensions or grid
size; mathematical identities (pi, sqrt(2), e); array shapes and index bounds; values the
evaluation harness reads, such as time limits; constants that encode a structure the program
must keep (vertices, basis vectors); booleans.

Intervals by family (default = the current value):
- learning rate, step size, temperature, amplitude: log scale, default/100 .. default*100
- tolerance, threshold: log scale, default/1000 .. default*1000
- penalty or reward weight: log scale, default/100 .. default*100
- cooling factor between 0 and 1: linear, 0.5 .. 0.99999
- probability or acceptance ratio: linear, 0 .. 1
- restart count, population size, sample count: log scale, max(1, default/10) .. default*10
- iteration budget: log scale, default/5 .. default*5
- small integer choice: linear, 1 .. max(default*5, 20)
Otherwise use a log scale for positive non-integers below 1 or above 100 and a linear scale
else, with high/low of at least 10. Whenever high/low >= 100 the scale must be "log".
Probabilities and cooling factors stay within [0, 1]. Integer bounds are whole numbers, low >= 1.

Pick at most {MAX_KNOBS} constants; fewer is fine. Skip any literal that appears more than once
in the program, and skip anything you are unsure about.

For each constant give: name (unique snake_case), source_literal (the literal exactly as
written, e.g. "0.95" or "1e-6"), context_line (the full line it is on, verbatim), low, high,
scale ("linear" or "log"), kind ("int" or "float"), rationale (one short sentence).
Reply with only a JSON object {{"hparams": [...]}}, no markdown fences and no commentary."""


class KnobProposal(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=60)
    source_literal: str = Field(min_length=1)
    context_line: str = ""
    low: float
    high: float
    scale: Literal["linear", "log"] = "linear"
    kind: Literal["int", "float"] = "float"
    rationale: str = ""


class KnobReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    hparams: list[KnobProposal]


@dataclass
class KnobProposals:
    knobs: list[Knob] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # proposal name -> why
    error: str = ""  # the call failed or the reply was unusable
    reply: str = ""


def knob_grammar() -> str:
    """GBNF for the reply shape, for a local llama.cpp model. Free text is an unbounded
    repetition (a long bounded one makes llama.cpp's constrained sampling very slow); the
    reply's token budget bounds it instead."""
    return "\n".join([
        'root ::= "{\\"hparams\\": [" (knob (", " knob){0,' + str(MAX_KNOBS - 1) + '})? "]}"',
        ('knob ::= "{\\"name\\": " name ", \\"source_literal\\": " literal '
         '", \\"context_line\\": " text ", \\"low\\": " number ", \\"high\\": " number '
         '", \\"scale\\": " ("\\"linear\\"" | "\\"log\\"") '
         '", \\"kind\\": " ("\\"int\\"" | "\\"float\\"") ", \\"rationale\\": " text "}"'),
        'name ::= "\\"" [a-z_] [a-z0-9_]{0,39} "\\""',
        'literal ::= "\\"" [0-9.eE+_fFlLuU-]{1,24} "\\""',
        'text ::= "\\"" ([^"\\\\\\n] | "\\\\" ["\\\\nt])* "\\""',
        'number ::= "-"? [0-9]{1,12} ("." [0-9]{1,12})? ([eE] [-+]? [0-9]{1,3})?',
    ])


def _json_text(reply: str) -> str:
    reply = re.sub(r"<think>.*?</think>", "", reply, flags=re.DOTALL).strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", reply, re.DOTALL)
    if fenced:
        return fenced.group(1)
    start, end = reply.find("{"), reply.rfind("}")
    return reply[start:end + 1] if 0 <= start < end else reply


def validate_proposals(source: str, language: str, reply: str) -> KnobProposals:
    result = KnobProposals(reply=reply)
    try:
        data = json.loads(_json_text(reply))
        if isinstance(data, list):
            data = {"hparams": data}
        proposals = KnobReply.model_validate(data).hparams
    except (json.JSONDecodeError, ValidationError) as exc:
        result.error = f"unusable knob reply: {str(exc).splitlines()[0]}"
        return result
    sites = literal_sites(source, language)
    names: set[str] = set()
    for proposal in proposals:
        name = re.sub(r"\W+", "_", proposal.name.strip()).strip("_").lower() or "knob"
        try:
            default, kind = literal_value(proposal.source_literal)
        except ValueError:
            result.rejected[name] = f"{proposal.source_literal!r} is not a numeric literal"
            continue
        knob = Knob(name=name, source_literal=proposal.source_literal,
                    context_line=proposal.context_line.strip(), default=default,
                    low=min(proposal.low, proposal.high), high=max(proposal.low, proposal.high),
                    scale=proposal.scale, kind=kind, rationale=proposal.rationale.strip())
        found = locate(knob, sites)
        if isinstance(found, str):
            result.rejected[name] = found
        elif name in names:
            result.rejected[name] = "duplicate name"
        elif len(result.knobs) >= MAX_KNOBS:
            result.rejected[name] = f"more than {MAX_KNOBS} knobs"
        else:
            names.add(name)
            result.knobs.append(enforce_rules(knob))
    return result


async def propose_knobs(provider: LLMProvider, source: str, language: str, *,
                        use_grammar: bool = False, max_tokens: int = 2048) -> KnobProposals:
    """One call; the user message is the program in a fenced block tagged with its language."""
    lang = as_language(language)
    request = LLMRequest(
        (Message("system", KNOB_SYSTEM_PROMPT),
         Message("user", f"```{lang.fence_tag}\n{source}\n```")),
        GenerationParams(temperature=0.0, max_tokens=max_tokens,
                         grammar=knob_grammar() if use_grammar else None),
    )
    try:
        response = await provider.complete(request)
    except LLMError as exc:
        return KnobProposals(error=f"knob call failed: {type(exc).__name__}: {exc}")
    return validate_proposals(source, lang.name, response.text)
