"""Sub-problems proposed by the model (seed 004 §10.2, "problem decomposition" in the
comprehension phase): when a task declares none (`decomposition.subproblems`) and
`decomposition.propose` is on, the model reads the problem statement and the initial program's
result on every test case (id, verdict, score, time and, for a judged task, the first line of
the case's input) and groups the cases into sub-problems that call for different approaches:

    GROUP small: seed-0, seed-4, seed-7 | few trees, the budget covers them all
    GROUP large: seed-1, seed-2 | many trees far apart: choose which to skip

The reply is checked against the cases the run knows: unknown ids are dropped, a case named
twice stays in its first group, a group left empty is dropped, and fewer than two groups is no
decomposition. The outcome, groups or the reason there are none, is stored as a
``subproblems_proposed`` event through the recorder, so a resumed run uses the same groups and
does not ask again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cambrian.config.decomposition import SubproblemConfig
from cambrian.core.events import SubproblemsProposed
from cambrian.llm.base import GenerationParams, LLMRequest, Message
from cambrian.llm.gateway import LLMGateway
from cambrian.store.recorder import Recorder

PURPOSE = "decomposition"
TEMPERATURE = 0.3
MAX_PROBLEM = 1200  # characters of the problem statement the prompt shows
MAX_CASES = 60  # cases listed (the rest are left out of every group)
MAX_HEADER = 60  # characters of a case's first input line
_GROUP = re.compile(r"^\s*(?:\d+\s*[.)]\s*|[-*]\s+)?\**GROUP\**\s+(?P<name>[^:|]{1,40}?)\s*:"
                    r"\s*(?P<cases>[^|]*)(?:\|\s*(?P<about>.*\S))?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class CaseLine:
    """What the prompt shows of one test case."""

    case_id: str
    score: float | None
    verdict: str = ""
    time_s: float | None = None
    header: str = ""  # the first line of its input, where the run can read it

    def render(self) -> str:
        parts = [self.case_id, self.verdict or "",
                 "score " + (f"{self.score:.6g}" if self.score is not None else "-")]
        if self.time_s is not None:
            parts.append(f"{self.time_s:.2f} s")
        if self.header:
            parts.append(f"input starts: {self.header[:MAX_HEADER]}")
        return " | ".join(p for p in parts if p)


def case_lines(cases: Sequence[Mapping[str, Any]],
               headers: Mapping[str, str] | None = None) -> list[CaseLine]:
    """The initial program's stored per-case results (``extra["cases"]``) as prompt lines."""
    lines: list[CaseLine] = []
    for index, case in enumerate(cases):
        case_id = str(case.get("case", case.get("id", index)))
        score = case.get("score")
        time_s = case.get("time_s")
        lines.append(CaseLine(
            case_id, float(score) if isinstance(score, (int, float)) else None,
            str(case.get("verdict", "")),
            float(time_s) if isinstance(time_s, (int, float)) else None,
            " ".join((headers or {}).get(case_id, "").split())))
    return lines[:MAX_CASES]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")[:40]


def parse_groups(text: str, case_ids: Sequence[str], max_groups: int) -> list[SubproblemConfig]:
    """The sub-problems a reply names (at most ``max_groups``), each with the known cases it
    lists; empty when fewer than two groups keep a case."""
    known = {case_id.lower(): case_id for case_id in case_ids}
    taken: set[str] = set()
    groups: list[SubproblemConfig] = []
    for line in text.splitlines():
        match = _GROUP.match(line)
        if match is None:
            continue
        name = _slug(match["name"])
        if not name or any(g.name == name for g in groups):
            continue
        cases = []
        for token in re.split(r"[\s,;]+", match["cases"]):
            case_id = known.get(token.strip(" .`'\"").lower())
            if case_id is not None and case_id not in taken:
                taken.add(case_id)
                cases.append(case_id)
        if cases:
            groups.append(SubproblemConfig(name=name, cases=cases,
                                           description=(match["about"] or "")[:200]))
        if len(groups) == max_groups:
            break
    return groups if len(groups) >= 2 else []


def proposal_grammar(case_ids: Sequence[str], max_groups: int) -> str:
    """GBNF for local models: 2 to ``max_groups`` GROUP lines naming known case ids."""
    ids = " | ".join(f'"{case_id}"' for case_id in case_ids)
    return "\n".join([
        f"root ::= group group group{{0,{max(0, max_groups - 2)}}}",
        'group ::= "GROUP " name ": " case (", " case){0,40} " | " about "\\n"',
        "name ::= [a-z] [a-z_]{1,20}",
        f"case ::= {ids}",
        "about ::= [^\\n|]{3,100}",
    ])


def proposal_prompt(problem: str, lines: Sequence[CaseLine], max_groups: int) -> str:
    statement = " ".join(problem.split())[:MAX_PROBLEM]
    table = "\n".join(line.render() for line in lines)
    example = lines[0].case_id if lines else "case-1"
    return (
        "You plan a search that improves a program on a set of test cases. Split the cases "
        "into independent sub-problems: groups of cases that look alike (similar inputs, "
        "similar results of the current program) and may need a different approach than the "
        "other groups. Each group gets its own population of programs.\n\n"
        f"## The problem\n{statement}\n\n"
        f"## The current program on each case\n{table}\n\n"
        f"Reply with 2 to {max_groups} lines, one per group, and nothing else:\n"
        f"GROUP <short_name>: {example}, <more case ids> | <what its cases have in common>")


class SubproblemProposer:
    """One model call that groups the initial program's cases into sub-problems."""

    def __init__(self, gateway: LLMGateway, recorder: Recorder, model_label: str, *,
                 problem: str, max_groups: int, max_tokens: int) -> None:
        self.gateway = gateway
        self.recorder = recorder
        self.model_label = model_label
        self.problem = problem
        self.max_groups = max_groups
        self.max_tokens = max_tokens

    async def propose(self, lines: Sequence[CaseLine]) -> SubproblemsProposed:
        """The stored outcome: the groups, or none and why."""
        case_ids = [line.case_id for line in lines]
        if len(case_ids) < 2:
            return self.record_none("fewer than two test cases with results")
        request = LLMRequest(
            (Message("user", proposal_prompt(self.problem, lines, self.max_groups)),),
            GenerationParams(temperature=TEMPERATURE, max_tokens=self.max_tokens,
                             grammar=proposal_grammar(case_ids, self.max_groups)))
        call = await self.gateway.call(PURPOSE, self.model_label, request)
        if call.response is None:
            return self._record([], call.skipped or call.error or "the call failed")
        groups = parse_groups(call.response.text, case_ids, self.max_groups)
        error = "" if groups else "the reply held fewer than two GROUP lines with known cases"
        return self._record(groups, error, call.context_id)

    def record_none(self, reason: str) -> SubproblemsProposed:
        return self._record([], reason)

    def _record(self, groups: list[SubproblemConfig], error: str,
                context_id: int | None = None) -> SubproblemsProposed:
        event = SubproblemsProposed(subproblems=[g.model_dump() for g in groups],
                                    model=self.model_label, error=error,
                                    context_id=context_id)
        self.recorder.emit(event)
        return event


def proposed_subproblems(event: SubproblemsProposed | None) -> list[SubproblemConfig]:
    return [SubproblemConfig.model_validate(g) for g in event.subproblems] if event else []
