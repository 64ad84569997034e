"""Run configuration: one module per section (``task.py``, ``llm.py``, ``evolution.py``,
``mutation.py``...; their strict base in ``strict.py``), the whole ``RunConfig`` assembled from
them (``sections.py``), a judged task's ``judge:`` section (``judge.py``) and how layers are read
and validated (``loading.py``)."""

from cambrian.config.budget import BudgetConfig
from cambrian.config.comprehension import ComprehensionConfig
from cambrian.config.database import DatabaseConfig, ParentSelection
from cambrian.config.evaluation import DevicesConfig, EvaluationConfig
from cambrian.config.evolution import EvolutionConfig, PatchType
from cambrian.config.execution import ExecutionConfig
from cambrian.config.first_program import FirstProgramConfig
from cambrian.config.llm import LLMConfig, ModelConfig, PatchFormat, RetryConfig
from cambrian.config.loading import (
    build_config,
    deep_merge,
    parse_override,
    read_config_file,
    stored_form,
    validate_config,
)
from cambrian.config.meta import MetaConfig
from cambrian.config.mutation import ALL_MUTATION_INTENTS, MutationConfig, MutationIntentName
from cambrian.config.novelty import NoveltyConfig
from cambrian.config.prompt import PromptConfig
from cambrian.config.prompt_evolution import PromptEvolutionConfig
from cambrian.config.search import SearchConfig
from cambrian.config.sections import RunConfig
from cambrian.config.strict import StrictModel
from cambrian.config.task import TaskConfig
from cambrian.config.trace_feedback import TraceFeedbackConfig
from cambrian.config.tracking import TrackingConfig
from cambrian.core.errors import ConfigError

__all__ = [
    "ALL_MUTATION_INTENTS", "BudgetConfig", "ComprehensionConfig", "ConfigError",
    "DatabaseConfig", "DevicesConfig", "EvaluationConfig", "EvolutionConfig", "ExecutionConfig", "FirstProgramConfig", "LLMConfig",
    "MetaConfig", "ModelConfig", "MutationConfig", "MutationIntentName", "NoveltyConfig",
    "ParentSelection", "PatchFormat", "PatchType", "PromptConfig", "PromptEvolutionConfig",
    "RetryConfig", "RunConfig", "SearchConfig", "StrictModel", "TaskConfig",
    "TraceFeedbackConfig", "TrackingConfig", "build_config", "deep_merge", "parse_override", "read_config_file",
    "stored_form", "validate_config",
]
