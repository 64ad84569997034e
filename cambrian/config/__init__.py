"""Run configuration: the sections (``sections.py``; the ``mutation:`` one in ``mutation.py``,
their strict base in ``strict.py``), a judged task's ``judge:`` section (``judge.py``) and how
layers are read and validated (``loading.py``)."""

from cambrian.config.loading import (
    build_config,
    deep_merge,
    parse_override,
    read_config_file,
    stored_form,
    validate_config,
)
from cambrian.config.mutation import ALL_MUTATION_INTENTS, MutationConfig, MutationIntentName
from cambrian.config.sections import (
    BudgetConfig,
    ComprehensionConfig,
    DatabaseConfig,
    DevicesConfig,
    EvaluationConfig,
    EvolutionConfig,
    ExecutionConfig,
    FirstProgramConfig,
    LLMConfig,
    MetaConfig,
    ModelConfig,
    NoveltyConfig,
    ParentSelection,
    PatchFormat,
    PatchType,
    PromptConfig,
    PromptEvolutionConfig,
    RetryConfig,
    RunConfig,
    SearchConfig,
    TaskConfig,
    TraceFeedbackConfig,
    TrackingConfig,
)
from cambrian.config.strict import StrictModel
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
