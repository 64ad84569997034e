"""How the composition root (``search/build.py``) adds decomposition to a run: the hook when
sub-problems are declared or ``decomposition.propose`` asks the model for them, with the
proposer's model and, for a judged task, the first input line of each public case."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from cambrian.config import RunConfig
from cambrian.core.hooks import DirectChild
from cambrian.core.objective import Objective
from cambrian.evaluate.judge.factory import public_case_headers
from cambrian.llm.gateway import LLMGateway
from cambrian.meta.subproblem_proposal import SubproblemProposer
from cambrian.search.decomposition import Decomposition
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store
from cambrian.task.folder import Task


def build_decomposition(config: RunConfig, task: Task, store: Store, recorder: Recorder,
                        objective: Objective, gateway: LLMGateway, *, work_root: Path,
                        run_dir: Path, record_child: Callable[[int, DirectChild], int | None],
                        families: Callable[[], Mapping[int, str]]) -> Decomposition | None:
    settings = config.decomposition
    if not settings.subproblems and not settings.propose:
        return None
    proposer = None
    if not settings.subproblems:
        proposer = SubproblemProposer(
            gateway, recorder, gateway.label(settings.model, "decomposition.model"),
            problem=task.problem_statement or "", max_groups=settings.max_subproblems,
            max_tokens=settings.max_tokens)
    judge = config.judge

    def headers() -> Mapping[str, str]:
        return public_case_headers(task.root, judge, run_dir) if judge is not None else {}

    return Decomposition(settings, store, recorder, objective, task_root=task.root,
                         work_root=work_root, record_child=record_child, families=families,
                         proposer=proposer, case_headers=headers)
