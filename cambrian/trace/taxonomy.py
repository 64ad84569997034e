"""The nine-label edit taxonomy (seed 001 §5.1, B.4, B.5): label definitions, the judge prompt,
the reply schema, and a llama.cpp grammar that makes a local judge's reply valid by construction.

One request labels a batch of diffs, named ``E1``, ``E2``, ... in the prompt. The reply is one
JSON object ``{"edits": [{"id": "E1", "labels": [...], "rationale": "..."}, ...]}``; it is
validated against :class:`JudgeReply` (a pydantic model; its JSON schema is
``JudgeReply.model_json_schema()``) plus the batch's own constraint that every id appears exactly
once. Labels are multi-label with no precedence between them.

A run whose candidates are text artifacts (a prompt, a document, a config: ``Language.text``)
is judged with the same nine labels read for a text (``TEXT_READINGS``: a reworded instruction
is a local refinement, an added example a composition...), under a rubric of its own
(``rubric_for``), so that prevalence and helpfulness compare across runs and cached labels of
code edits are never reused for text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cambrian.lang.lines import language_named

# Bump when the prompt or the label definitions change: cached labels are keyed by it.
RUBRIC_VERSION = "cambrian-taxonomy-v1"

EditLabel = Literal[
    "hyperparameter_tuning", "local_refinement", "architectural_change", "composition",
    "efficiency", "bug_fix", "pruning", "refactor", "external_dependency",
]


@dataclass(frozen=True)
class LabelDefinition:
    name: str
    meaning: str
    cue: str  # what in a diff gives it away


# Working definitions after seed 001 Table 9 (B.4), with the cues of the curated examples (B.5).
DEFINITIONS: tuple[LabelDefinition, ...] = (
    LabelDefinition("hyperparameter_tuning",
                    "numeric literals or configuration values change; the algorithm around them "
                    "stays as it was",
                    "only numbers or settings differ between - and + lines"),
    LabelDefinition("local_refinement",
                    "a targeted change inside an existing routine that keeps the routine's role "
                    "and structure",
                    "a few lines inside one function gain a term, condition or bonus"),
    LabelDefinition("architectural_change",
                    "a core algorithmic block is replaced by a substantively different approach",
                    "a search or construction method is removed and a different one takes its "
                    "place"),
    LabelDefinition("composition",
                    "a new component (operator, phase, branch) is added next to existing logic, "
                    "which is kept",
                    "new function or phase added while the old path still runs"),
    LabelDefinition("efficiency",
                    "the same input-output behaviour at lower asymptotic or constant cost",
                    "vectorisation, caching, batching, partial sort instead of full sort"),
    LabelDefinition("bug_fix",
                    "a latent defect is corrected: missing guard, wrong sign, off-by-one, "
                    "mishandled sentinel",
                    "a new check of a return value or bound; a corrected index or sign"),
    LabelDefinition("pruning",
                    "a code path, phase or feature is removed and the rest is kept intact",
                    "mostly - lines that delete a whole step"),
    LabelDefinition("refactor",
                    "behaviour-preserving restructuring: renaming, reordering, extracting helpers, "
                    "moving declarations",
                    "the same logic moves or is renamed without changing what it computes"),
    LabelDefinition("external_dependency",
                    "an import or external library is introduced or removed",
                    "import / #include lines added or deleted"),
)
LABELS: tuple[str, ...] = tuple(d.name for d in DEFINITIONS)
MAX_RATIONALE_CHARS = 160

SYSTEM_PROMPT = (
    "You classify code edits made during an evolutionary search over programs. Each edit is a "
    "unified diff from a parent program to its child (lines starting with - were removed, + "
    "were added). Give every edit ALL labels that apply (at least one) from this list:\n"
    + "\n".join(f"- {d.name}: {d.meaning}. Cue: {d.cue}." for d in DEFINITIONS)
    + "\nJudge only what the diff shows; an edit is often several kinds at once (for example "
    "pruning plus hyperparameter_tuning). Reply with a single JSON object and nothing else."
)
TEXT_RUBRIC_VERSION = f"{RUBRIC_VERSION}+text"
# The nine labels read for an edit of a text artifact (a prompt, a document, a config).
TEXT_READINGS: dict[str, str] = {
    "hyperparameter_tuning": "a number or a setting's value changes; the wording around it stays",
    "local_refinement": "one instruction or sentence is reworded, sharpened or completed",
    "architectural_change": "the text is rewritten around a different approach (other rules, "
                            "another structure, another way of explaining the task)",
    "composition": "a new instruction, rule, section or example is added and the rest is kept",
    "efficiency": "the same content said shorter",
    "bug_fix": "a wrong, contradictory or misleading statement is corrected",
    "pruning": "an instruction, section or example is removed and the rest is kept",
    "refactor": "the same content reordered or reworded without changing what it asks",
    "external_dependency": "a reference to an outside file, tool, resource or service is added "
                           "or removed",
}
TEXT_SYSTEM_PROMPT = (
    "You classify edits of a text (a prompt, a document or a config) made during an "
    "evolutionary search over such texts. Each edit is a unified diff from a parent text to its "
    "child (lines starting with - were removed, + were added). Give every edit ALL labels that "
    "apply (at least one) from this list:\n"
    + "\n".join(f"- {name}: {reading}." for name, reading in TEXT_READINGS.items())
    + "\nJudge only what the diff shows; an edit is often several kinds at once (for example "
    "composition plus pruning). Reply with a single JSON object and nothing else."
)


def is_text_run(language: str | None) -> bool:
    """Whether a run's candidates (by its language's name) are text artifacts."""
    return language_named(language).text


def rubric_for(language: str | None) -> str:
    """The rubric a run's edits are judged (and their labels cached) under."""
    return TEXT_RUBRIC_VERSION if is_text_run(language) else RUBRIC_VERSION


def system_prompt_for(language: str | None) -> str:
    return TEXT_SYSTEM_PROMPT if is_text_run(language) else SYSTEM_PROMPT


def edit_name(position: int) -> str:
    return f"E{position + 1}"


def user_prompt(diffs: list[tuple[str, str]]) -> str:
    """``diffs``: (language, unified diff) per edit, in batch order."""
    parts = [f"Label the {len(diffs)} edit(s) below."]
    for position, (language, diff) in enumerate(diffs):
        parts.append(f"### Edit {edit_name(position)} ({language})\n```diff\n{diff}```")
    names = ", ".join(edit_name(i) for i in range(len(diffs)))
    parts.append(
        'Reply with only this JSON object, one entry per edit, in order (' + names + '):\n'
        '{"edits": [{"id": "E1", "labels": ["<label>", ...], "rationale": "<one short '
        'sentence>"}, ...]}'
    )
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------- reply schema


class EditVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    labels: list[EditLabel] = Field(min_length=1, max_length=len(LABELS))
    rationale: str = ""

    @field_validator("labels", mode="before")
    @classmethod
    def _canonical_names(cls, value: object) -> object:
        """Accept "Bug fix" or "bug-fix" for bug_fix; anything else still fails the schema."""
        if isinstance(value, list):
            return [re.sub(r"[\s\-]+", "_", v.strip().lower()) if isinstance(v, str) else v
                    for v in value]
        return value


class JudgeReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    edits: list[EditVerdict]


class JudgeReplyError(ValueError):
    """The reply is not valid JSON, breaks the schema, or does not cover the batch."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _json_text(reply: str) -> str:
    reply = re.sub(r"<think>.*?</think>", "", reply, flags=re.DOTALL).strip()
    fenced = _FENCE.search(reply)
    if fenced:
        return fenced.group(1).strip()
    start, end = reply.find("{"), reply.rfind("}")
    return reply[start:end + 1] if 0 <= start < end else reply


def parse_reply(reply: str, batch_size: int) -> list[tuple[tuple[str, ...], str]]:
    """(labels, rationale) per edit, in batch order; raises :class:`JudgeReplyError` with a
    message short enough to send back to the judge."""
    try:
        data = json.loads(_json_text(reply))
    except json.JSONDecodeError as exc:
        raise JudgeReplyError(
            f"the reply is not valid JSON ({exc.msg} at char {exc.pos})") from None
    try:
        parsed = JudgeReply.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                             for e in exc.errors()[:4])
        raise JudgeReplyError(f"the JSON does not match the schema ({problems})") from None
    expected = [edit_name(i) for i in range(batch_size)]
    by_id: dict[str, EditVerdict] = {}
    for verdict in parsed.edits:
        if verdict.id in by_id:
            raise JudgeReplyError(f"edit {verdict.id} appears twice")
        by_id[verdict.id] = verdict
    missing = [name for name in expected if name not in by_id]
    unknown = sorted(set(by_id) - set(expected))
    if missing or unknown:
        raise JudgeReplyError(
            "the reply must contain exactly the edits " + ", ".join(expected)
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(unknown)}" if unknown else ""))
    results = []
    for name in expected:
        verdict = by_id[name]
        labels = tuple(dict.fromkeys(verdict.labels))  # drop repeats, keep order
        results.append((labels, verdict.rationale.strip()[:MAX_RATIONALE_CHARS]))
    return results


# ---------------------------------------------------------------------------- grammar


def _gbnf_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def reply_grammar(batch_size: int, *, max_labels: int = 3) -> str:
    """GBNF that admits only valid replies for a batch: the ids in order, each with one to
    ``max_labels`` known labels. The rationale is left out: it is optional in the schema, and a
    bounded free-text rule makes llama.cpp's constrained sampling very slow. The label cap keeps
    a small model from listing all nine labels in prompt order."""
    entries = [f"edit{i}" for i in range(batch_size)]
    rules = ['root ::= "{\\"edits\\": [" ' + ' ", " '.join(entries) + ' "]}"']
    for i, entry in enumerate(entries):
        head = _gbnf_string(f'{{"id": "{edit_name(i)}", "labels": ')
        rules.append(f'{entry} ::= {head} labels "}}"')
    rules.append(f'labels ::= "[" label (", " label){{0,{max_labels - 1}}} "]"')
    rules.append("label ::= " + " | ".join(_gbnf_string(f'"{name}"') for name in LABELS))
    return "\n".join(rules)
