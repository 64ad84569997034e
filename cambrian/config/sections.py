"""Run configuration: one strict pydantic model per section.

Precedence, lowest first: built-in defaults < the task folder's ``config.yaml`` < a config file
given on the command line < ``--set section.key=value`` overrides. An unknown key anywhere is an
error that names the closest valid key (the peers silently ignore such keys; users then wonder why
their setting did nothing).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr

from cambrian.config.budget import BudgetConfig
from cambrian.config.comprehension import ComprehensionConfig
from cambrian.config.database import DatabaseConfig
from cambrian.config.decomposition import DecompositionConfig
from cambrian.config.evaluation import EvaluationConfig
from cambrian.config.evolution import EvolutionConfig
from cambrian.config.execution import ExecutionConfig
from cambrian.config.first_program import FirstProgramConfig
from cambrian.config.judge import JudgeConfig
from cambrian.config.llm import LLMConfig
from cambrian.config.meta import MetaConfig
from cambrian.config.mutation import MutationConfig
from cambrian.config.niches import NichesConfig
from cambrian.config.novelty import NoveltyConfig
from cambrian.config.phases import PhasesConfig
from cambrian.config.prompt import PromptConfig
from cambrian.config.prompt_evolution import PromptEvolutionConfig
from cambrian.config.reflection import ReflectionConfig
from cambrian.config.search import SearchConfig
from cambrian.config.strict import StrictModel
from cambrian.config.task import TaskConfig
from cambrian.config.trace_feedback import TraceFeedbackConfig
from cambrian.config.tracking import TrackingConfig


class RunConfig(StrictModel):
    task: TaskConfig = Field(
        default_factory=TaskConfig,
        description="What the task folder holds: name, direction, language, files.",
    )
    llm: LLMConfig = Field(
        default_factory=LLMConfig,
        description="The models, how they are drawn and retried.",
    )
    database: DatabaseConfig = Field(
        default_factory=DatabaseConfig,
        description="The island archive and parent selection.",
    )
    search: SearchConfig = Field(
        default_factory=SearchConfig,
        description="The search algorithm, plugins and the loop's swappable components.",
    )
    evolution: EvolutionConfig = Field(
        default_factory=EvolutionConfig,
        description="Generations, parallelism, seed and early stops.",
    )
    mutation: MutationConfig = Field(
        default_factory=MutationConfig,
        description="Mutation intents, their schedule, strategy menu and improvement step.",
    )
    evaluation: EvaluationConfig = Field(
        default_factory=EvaluationConfig,
        description="How a candidate is evaluated and contained: contract, limits, network, "
                    "devices.",
    )
    execution: ExecutionConfig = Field(
        default_factory=ExecutionConfig,
        description="Where evaluations run: locally or on Ray.",
    )
    budget: BudgetConfig = Field(
        default_factory=BudgetConfig,
        description="Caps on money, tokens, LLM calls and wall time.",
    )
    novelty: NoveltyConfig = Field(
        default_factory=NoveltyConfig,
        description="Novelty rejection of near-copies.",
    )
    meta: MetaConfig = Field(default_factory=MetaConfig, description="The meta-scratchpad.")
    reflection: ReflectionConfig = Field(
        default_factory=ReflectionConfig,
        description="Self-reflection on the run's own statistics.",
    )
    comprehension: ComprehensionConfig = Field(
        default_factory=ComprehensionConfig,
        description="The problem brief written before the first proposal.",
    )
    first_program: FirstProgramConfig = Field(
        default_factory=FirstProgramConfig,
        description="An LLM-written first program for a task without one.",
    )
    prompt: PromptConfig = Field(
        default_factory=PromptConfig,
        description="What prompts show and reply budgets.",
    )
    prompt_evolution: PromptEvolutionConfig = Field(
        default_factory=PromptEvolutionConfig,
        description="Co-evolved system prompts.",
    )
    trace_feedback: TraceFeedbackConfig = Field(
        default_factory=TraceFeedbackConfig,
        description="What the trace analyses feed back: deletion filter, deletion history, "
                    "tune step.",
    )
    tracking: TrackingConfig = Field(
        default_factory=TrackingConfig,
        description="Export to MLflow and Weights & Biases.",
    )
    niches: NichesConfig = Field(
        default_factory=NichesConfig,
        description="Strategy niches: tagging programs by strategy family, and the niche "
                    "archive.",
    )
    phases: PhasesConfig = Field(
        default_factory=PhasesConfig,
        description="Search phases: exploration, exploitation, polishing.",
    )
    decomposition: DecompositionConfig = Field(
        default_factory=DecompositionConfig,
        description="Sub-problems of the task's test cases.",
    )
    judge: JudgeConfig | None = Field(
        None,
        description="A judged (contest-style) task: compiled, run on generated test cases, "
                    "scored per case; None: the task has an evaluator.",
    )
    # The values written as ${VAR} (config/env_vars.py): by path, their text and the value it
    # gave, so what the run stores is the reference, never the value (loading.stored_form).
    _env_templates: dict[tuple[str | int, ...], tuple[str, Any]] = PrivateAttr(
        default_factory=dict)
